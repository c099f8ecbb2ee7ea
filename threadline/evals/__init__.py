"""`threadline eval`: conversations written as YAML cases, run against a config (or two, side by
side), each reply held to what the operator expects; see docs/evals.md."""
