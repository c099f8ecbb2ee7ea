"""A Slack app installed in many workspaces (`threadline.backends.sql.slack_installations`).

`threadline_slack_installations` and `threadline_slack_bots` have the columns slack_sdk's
SQLAlchemy installation store reads and writes (slack_sdk 3.x), except that the token columns
are Text: they hold Fernet ciphertext, longer than the tokens. `threadline_slack_oauth_states`
keeps the OAuth `state` values, each deleted by the one redirect that consumes it.

Revision ID: slack_installations
Revises: turn_files
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "slack_installations"
down_revision = "turn_files"
branch_labels = None
depends_on = None


def _workspace_columns() -> list[sa.Column[object]]:
    """The columns bots and installations share, in slack_sdk's order."""
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("client_id", sa.String(32), nullable=False),
        sa.Column("app_id", sa.String(32), nullable=False),
        sa.Column("enterprise_id", sa.String(32)),
        sa.Column("enterprise_name", sa.String(200)),
    ]


def _bot_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("bot_token", sa.Text),
        sa.Column("bot_id", sa.String(32)),
        sa.Column("bot_user_id", sa.String(32)),
        sa.Column("bot_scopes", sa.String(1000)),
        sa.Column("bot_refresh_token", sa.Text),
        sa.Column("bot_token_expires_at", sa.DateTime),
    ]


def upgrade() -> None:
    op.create_table(
        "threadline_slack_installations",
        *_workspace_columns(),
        sa.Column("enterprise_url", sa.String(200)),
        sa.Column("team_id", sa.String(32)),
        sa.Column("team_name", sa.String(200)),
        *_bot_columns(),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("user_token", sa.Text),
        sa.Column("user_scopes", sa.String(1000)),
        sa.Column("user_refresh_token", sa.Text),
        sa.Column("user_token_expires_at", sa.DateTime),
        sa.Column("incoming_webhook_url", sa.Text),
        sa.Column("incoming_webhook_channel", sa.String(200)),
        sa.Column("incoming_webhook_channel_id", sa.String(200)),
        sa.Column("incoming_webhook_configuration_url", sa.String(200)),
        sa.Column("is_enterprise_install", sa.Boolean, nullable=False, default=False),
        sa.Column("token_type", sa.String(32)),
        sa.Column("installed_at", sa.DateTime, nullable=False),
    )
    op.create_index("threadline_slack_installations_idx", "threadline_slack_installations",
                    ["client_id", "enterprise_id", "team_id", "user_id", "installed_at"])
    op.create_table(
        "threadline_slack_bots",
        *_workspace_columns(),
        sa.Column("team_id", sa.String(32)),
        sa.Column("team_name", sa.String(200)),
        *_bot_columns(),
        sa.Column("is_enterprise_install", sa.Boolean, nullable=False, default=False),
        sa.Column("installed_at", sa.DateTime, nullable=False),
    )
    op.create_index("threadline_slack_bots_idx", "threadline_slack_bots",
                    ["client_id", "enterprise_id", "team_id", "installed_at"])
    op.create_table(
        "threadline_slack_oauth_states",
        sa.Column("state", sa.String(64), primary_key=True),
        sa.Column("expires_us", sa.BigInteger, nullable=False),
    )
    # Expired states are deleted at each install: by range, not by reading every state (the
    # install page is public, so anyone may start many installs).
    op.create_index("ix_threadline_slack_oauth_states_expires", "threadline_slack_oauth_states",
                    ["expires_us"])


def downgrade() -> None:
    op.drop_index("ix_threadline_slack_oauth_states_expires",
                  table_name="threadline_slack_oauth_states")
    op.drop_table("threadline_slack_oauth_states")
    op.drop_index("threadline_slack_bots_idx", table_name="threadline_slack_bots")
    op.drop_table("threadline_slack_bots")
    op.drop_index("threadline_slack_installations_idx",
                  table_name="threadline_slack_installations")
    op.drop_table("threadline_slack_installations")
