"""The Markdown the agents write, as each platform shows it: one corpus through every platform's
emitter (`im_app.markup.render`), and long answers split at each platform's message limit
(`im_app.formatting.split_rendered`) into messages that are each well-formed.

A new platform adds its column to every row of CORPUS (the first test fails until it does)."""

from __future__ import annotations

import pytest

from im_app.formatting import split_rendered
from im_app.markup import render
from im_app.platforms.registry import PLATFORMS


def same(text: str) -> dict[str, str]:
    return {"slack": text, "telegram": text, "feishu": text}


# (what, the model's Markdown, {platform: what the platform is sent})
CORPUS = [
    (
        "a heading is a bold line",
        "## Disk\nfull",
        {"slack": "*Disk*\nfull", "telegram": "<b>Disk</b>\nfull", "feishu": "**Disk**\nfull"},
    ),
    (
        "bold",
        "**db-1** is at 91%",
        {"slack": "*db-1* is at 91%", "telegram": "<b>db-1</b> is at 91%", "feishu": "**db-1** is at 91%"},
    ),
    # Only Telegram renders the model's *italics*; Slack and Feishu get them as written.
    (
        "italics",
        "*maybe* not",
        {"slack": "*maybe* not", "telegram": "<i>maybe</i> not", "feishu": "*maybe* not"},
    ),
    (
        "stars and underscores in words stay",
        "disk_usage_bytes 2*3*4 a * b",
        same("disk_usage_bytes 2*3*4 a * b"),
    ),
    (
        "&, < and > are escaped everywhere",
        "the <postgres> WAL & logs",
        same("the &lt;postgres&gt; WAL &amp; logs"),
    ),
    (
        "mentions and tags cannot be formed",
        '<!channel> <@U123> <at user_id="all"></at>',
        same('&lt;!channel&gt; &lt;@U123&gt; &lt;at user_id="all"&gt;&lt;/at&gt;'),
    ),
    (
        "inline code",
        "run `a<b && c>d`",
        {
            "slack": "run `a&lt;b &amp;&amp; c&gt;d`",
            "telegram": "run <code>a&lt;b &amp;&amp; c&gt;d</code>",
            "feishu": "run `a<b && c>d`",
        },
    ),
    (
        "markup inside inline code is code",
        "`**not bold**`",
        {"slack": "`**not bold**`", "telegram": "<code>**not bold**</code>", "feishu": "`**not bold**`"},
    ),
    (
        "a code block, its language tag dropped",
        "see:\n```sh\ndu -sh /var/* | sort -h > top\n```\ndone",
        {
            "slack": "see:\n```\ndu -sh /var/* | sort -h &gt; top\n```\ndone",
            "telegram": "see:\n<pre>du -sh /var/* | sort -h &gt; top</pre>\ndone",
            "feishu": "see:\n```\ndu -sh /var/* | sort -h > top\n```\ndone",
        },
    ),
    (
        "no markup inside a code block",
        "```\n**x** [a](https://b.example) `c`\n```",
        {
            "slack": "```\n**x** [a](https://b.example) `c`\n```",
            "telegram": "<pre>**x** [a](https://b.example) `c`</pre>",
            "feishu": "```\n**x** [a](https://b.example) `c`\n```",
        },
    ),
    (
        "a link",
        "[the runbook](https://runbooks.example/disk?a=1&b=2)",
        {
            "slack": "<https://runbooks.example/disk?a=1&amp;b=2|the runbook>",
            "telegram": '<a href="https://runbooks.example/disk?a=1&amp;b=2">the runbook</a>',
            "feishu": "[the runbook](https://runbooks.example/disk?a=1&b=2)",
        },
    ),
    (
        "a link label cannot end Slack's link early",
        "[p50 | p99 <ms>](https://g.example/x)",
        {
            "slack": "<https://g.example/x|p50 ¦ p99 &lt;ms&gt;>",
            "telegram": '<a href="https://g.example/x">p50 | p99 &lt;ms&gt;</a>',
            "feishu": "[p50 | p99 &lt;ms&gt;](https://g.example/x)",
        },
    ),
    (
        "only http(s) links are links",
        "[x](ftp://h.example/f) [y](javascript:alert)",
        same("[x](ftp://h.example/f) [y](javascript:alert)"),
    ),
    (
        "a bullet list is text",
        "- one\n- **two**",
        {"slack": "- one\n- *two*", "telegram": "- one\n- <b>two</b>", "feishu": "- one\n- **two**"},
    ),
    ("a numbered list is text", "1. one\n2. two", same("1. one\n2. two")),
    ("a quote is text, its > escaped", "> quoted & kept", same("&gt; quoted &amp; kept")),
    ("surrounding blank lines are dropped", "\n\n  text  \n\n", same("text")),
]


def test_every_row_has_every_platforms_output():
    assert all(set(expected) == set(PLATFORMS) for _what, _markdown, expected in CORPUS)


@pytest.mark.parametrize("platform", list(PLATFORMS))
@pytest.mark.parametrize(("what", "markdown", "expected"), CORPUS, ids=[row[0] for row in CORPUS])
def test_the_corpus_in_each_platforms_markup(platform, what, markdown, expected):
    assert render(markdown, PLATFORMS[platform].thread.markup) == expected[platform]


# --- splitting at the limit ---------------------------------------------------------------------

FENCES = {"slack": ("```", "```"), "telegram": ("<pre>", "</pre>"), "feishu": ("```", "```")}
BOLD = {"slack": "*load*", "telegram": "<b>load</b>", "feishu": "**load**"}


def renderer(platform: str):
    return lambda markdown: render(markdown, PLATFORMS[platform].thread.markup)


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_a_long_answer_is_split_into_messages_that_are_each_well_formed(platform):
    limit = PLATFORMS[platform].thread.max_text
    markdown = (
        "\n".join(f"line {n}: **load** <{n}> & more" for n in range(1000)) + "\n```\n" + "x\n" * 9000 + "```"
    )

    chunks = split_rendered(markdown, renderer(platform), limit)

    assert len(chunks) > 2 and all(len(chunk) <= limit for chunk in chunks)
    opening, closing = FENCES[platform]
    if opening == closing:
        assert all(chunk.count(opening) % 2 == 0 for chunk in chunks)
    else:
        assert all(chunk.count(opening) == chunk.count(closing) for chunk in chunks)
    bold = BOLD[platform]
    assert f"line 999: {bold} &lt;999&gt; &amp; more" in "".join(chunks)
    assert all(chunk.count(bold) == chunk.count("line ") for chunk in chunks)  # no line cut in two
    assert sum(chunk.count("x") for chunk in chunks) == 9000


def test_lines_stay_whole_and_what_is_longer_than_a_message_is_cut_where_its_rendering_fits():
    slack = renderer("slack")

    assert split_rendered("one\ntwo\nthree", slack, 8) == ["one\ntwo", "three"]
    # A code block is fenced again in each part; a long line is cut counting its escapes.
    assert split_rendered("intro\n```py\nx = 1\ny = 2\nz = 3\n```", slack, 22) == [
        "intro",
        "```\nx = 1\ny = 2\nz\n```",
        "```\n = 3\n```",
    ]
    assert split_rendered("a <b> & c " * 2, slack, 12) == ["a &lt;b&gt;", "&amp; c a", "&lt;b&gt;", "&amp; c"]


def test_a_short_answer_is_one_message_and_an_empty_one_still_a_message():
    telegram = renderer("telegram")

    assert split_rendered("**ok**", telegram, 4096) == ["<b>ok</b>"]
    assert split_rendered("", telegram, 4096) == [""]
