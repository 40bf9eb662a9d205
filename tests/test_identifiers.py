"""Identifiers kept by code: what is lifted, how it is counted through the chain, and that the facet fits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from debate_engine.memory import count_tokens
from debate_engine.memory.identifiers import fit, lift, line, merge, ranked
from tests.conftest import make_turn


def test_lift_takes_names_numbers_with_units_versions_paths_urls_and_quoted_literals() -> None:
    text = (
        "The rollout flag is flag_83_vpbhb. Use OAuth2 and ChatOpenAI over HTTP/1.1 at https://api.x.io/v1?q=1, "
        '300 ms and 1,000 requests per second, v1.2.3, `max_tokens` and "X-RateLimit-Remaining", mTLS, '
        "redis.conf and src/limiter.py. Plain words, JSON, a trade-off, e.g. this, stay out."
    )
    assert lift(text) == [
        "flag_83_vpbhb",
        "OAuth2",
        "ChatOpenAI",
        "HTTP/1.1",
        "https://api.x.io/v1?q=1",
        "300 ms",
        "1,000 requests per second",
        "v1.2.3",
        "`max_tokens`",
        "X-RateLimit-Remaining",
        "mTLS",
        "redis.conf",
        "src/limiter.py",
    ]


def test_merge_counts_turns_not_mentions_and_keeps_the_newest_seq() -> None:
    turns = [make_turn(0, content="node_1 node_1 node_2"), make_turn(5, content="node_1")]
    stats = merge({"old_id": [3, 1]}, turns, extra=["the cache is redis_7", "ModelEntity"], at=9)
    assert stats == {
        "old_id": [3, 1],
        "node_1": [2, 5],
        "node_2": [1, 0],
        "redis_7": [1, 9],
        "ModelEntity": [1, 9],
    }
    assert ranked(stats)[:2] == ["old_id", "node_1"]


def test_what_does_not_fit_is_counted_never_silent() -> None:
    stats = {f"id_{i}_{'x' * 20}": [1, i] for i in range(50)}
    kept, dropped = fit(stats, 60)
    assert kept and dropped == 50 - len(kept) > 0
    assert count_tokens(line(ranked(kept))) <= 60
    assert set(ranked(kept)) == set(ranked(stats)[: len(kept)]), "the newest are kept among equals"


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,8}_[0-9]{1,4}", fullmatch=True),
        st.tuples(st.integers(1, 9), st.integers(0, 500)).map(list),
        max_size=60,
    ),
    st.integers(0, 300),
)
def test_the_facet_always_fits_its_slot_and_counts_the_rest(stats: dict, limit: int) -> None:
    kept, dropped = fit(stats, limit)
    assert len(kept) + dropped == len(stats)
    assert not kept or count_tokens(line(ranked(kept))) <= limit


def test_a_line_whose_separators_tokenize_apart_still_fits() -> None:
    """Found by the property above: counting each identifier apart undercounted the joined line."""
    names = [
        "a_0",
        "a_0001",
        "a_1",
        "aa_1",
        "b_0",
        "c_0",
        "d_0",
        "e_0",
        "a_00",
        "a_01",
        "aa_0",
        "ab_0",
        "a_000",
        "aac_0",
        "baa_0",
        "a_0000",
        "b_0000",
        "c_0000",
        "aab_0000",
        "aaaa_0000",
        "aaua_0000",
        "aaaaa_0000",
        "f_0",
        "aab_00",
    ]
    kept, dropped = fit({n: [1, 0] for n in names}, 113)
    assert count_tokens(line(ranked(kept))) <= 113 and len(kept) + dropped == len(names)
