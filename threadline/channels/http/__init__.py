"""The `http` platform: any system without an SDK talks to the agents by signed webhooks."""
