"""Knowledge: agents answer from the team's own documents and say where they read it.

Sources (`source`), read and cut into sections (`documents`, `sections`), kept as the turns of
a conversation of their own (`shelf`, `sync`), searched by recall's engine with the
conversation around the question (`retrieval`), given to each agent by name (`library`), put in
the prompt (`grounding`) and offered as a tool (`tool`); `feature` wires it in.
"""
