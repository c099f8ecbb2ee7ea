"""A mention in a server channel becomes one stored turn and a reply in the same channel."""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore


async def test_mention_is_stored_and_answered_as_a_reply(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store)
        async with started_channel(fake, events, name="discord-main") as channel:
            sent = await fake.deliver_message(
                world.general, author=world.ada, mentions=(fake.bot, world.bob),
                content=f"<@{fake.bot.id}> what did <@!{world.bob.id}> say in <#{world.general}>?")
            inbound = await events.next_inbound()
            posts = await fake.wait_for_posts(1)

        assert channel.identity is not None
        assert channel.identity.user_id == fake.bot.id
        assert fake.bot.id in channel.identity.aliases
        assert inbound.conversation_id == f"discord:{world.guild.id}:{world.general}"
        assert inbound.id == f"discord:{sent['id']}"
        assert inbound.scope == "channel"
        assert (inbound.participant.kind, inbound.participant.id) == ("user", world.ada.id)
        assert inbound.participant.display_name == "Ada"  # the server nickname
        assert inbound.content == "@threadline what did @bob say in #general?"
        metadata = inbound.metadata
        assert metadata.channel_type == "discord"
        assert metadata.channel_name == "general"
        assert metadata.channel_id == world.general
        assert metadata.thread_id is None
        assert metadata.message_id == sent["id"]
        assert metadata.mentions == (fake.bot.id, world.bob.id)
        assert metadata.reply_to_message_id is None

        assert [p["content"] for p in posts] == [f"echo: {inbound.content}"]
        reply_call = fake.calls_to("POST", f"/channels/{world.general}/messages")[0]
        assert reply_call.json["message_reference"]["message_id"] == int(sent["id"])
        assert reply_call.json["allowed_mentions"]["parse"] == ["users"]  # never @everyone
        assert events.sent == [[fake.posted[0]["id"]]]
        stored = await store.get(inbound.conversation_id)
        assert [m.id for m in stored] == [inbound.id]


async def test_a_role_the_bot_holds_counts_as_mentioning_the_bot(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        helpers = fake.add_role(world.guild, name="Helpers", held_by_bot=True)
        managed = fake.add_role(world.guild, name="threadline", managed_for_bot=True)
        humans = fake.add_role(world.guild, name="Humans")
        events = RecordingEvents(store, reply=lambda m: None)
        async with started_channel(fake, events):
            for role in (helpers, managed, humans):
                await fake.deliver_message(world.general, author=world.ada,
                                           content=f"<@&{role}> ping", mention_roles=(role,))
            received = [await events.next_inbound() for _ in range(3)]

        by_role = {m.metadata.mentions[0]: m for m in received}
        assert by_role[helpers].metadata.mentions == (helpers, fake.bot.id)
        assert by_role[helpers].content == "@Helpers ping"
        assert by_role[managed].metadata.mentions == (managed, fake.bot.id)
        assert by_role[humans].metadata.mentions == (humans,)


async def test_a_reply_names_the_author_of_the_message_it_answers(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store)
        async with started_channel(fake, events):
            await fake.deliver_message(world.general, author=world.ada, content="hello bot")
            await events.next_inbound()
            (bot_reply,) = await fake.wait_for_posts(1)
            bot_message_id = fake.posted[0]["id"]
            await fake.deliver_message(world.general, author=world.bob, content="and more?",
                                       reply_to=bot_message_id)
            follow_up = await events.next_inbound()

        assert bot_reply["content"] == "echo: hello bot"
        assert follow_up.metadata.reply_to_message_id == bot_message_id
        assert follow_up.metadata.reply_to_participant_id == fake.bot.id
