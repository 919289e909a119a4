# ruff: noqa: E501
"""The labelled corpus (tests/toolerr/corpus, guide in GUIDE.md): its shape, the frozen
held-out split, the targets of the wide rules on that split, and `toolerr --eval`."""

from __future__ import annotations

import hashlib
import json

import pytest
from corpus_records import CORPUS, read_split

from exactserve.server.cli import main
from exactserve.toolerr.evaluate import LABELS, evaluate, predict, read_records

# Every held-out split, frozen by SHA-256 before its one evaluation (GUIDE.md says when
# each became tuning data).
FROZEN_SHA256 = {
    # frozen before any wide rule was written; tuning used dev only
    "test": "c037d8034a5d4c42b049bdf79d88eddcb0c0be9aba72c85250699bc63e8138d5",
    # collected after the wide rules were written, from projects on neither side of `test`
    "test2": "9842ed9556e4d29107b66ee4c6ecc66698b90b67b315e5630b1aeaf8adc12228",
    # session 4, rounds 1-4: each collected and labelled without running the rules while
    # they were tuned on the earlier splits
    "test3": "f289b349954119419baf25deaf9547124da1a536cb4bcb053982cb409170dada",
    "test4": "6303432da2c1c2d1bcd9ade5c943599bd137ab54ac400142ad5fa0f2275d92d9",
    "test5": "51e0b00ffd58116a3fe6e1dd54afff7df2a223167e8dca2e1623f2befc3908ba",
    "test6": "15af70385493174fda745fedb1827d5149155a11ac0b1c9efe4aa21092b9f052",
    # session 5, rounds 5-8: four or five collectors in parallel each, without the rules
    "test7": "0045c3d0772dbf978fe641fc7fb0299553e3a71c86d89da6593ff216bcb9f341",
    "test8": "23a7e5c09dbbc3b5b0032a4fd785617af085abe5f06b2c13cc111e7ecced6e34",
    "test9": "1dcf54ede11dc800ab8dba7d9beff582420186db5c61a1870858bee8a3da58c1",
    "test10": "757faa17200be9a5099dc09999b726b428c2ab8cf0b8ecb91b7c1f66cfce40a4",
    # session 6: five collectors in parallel while round 9 tuned on test10
    "test11": "c98f61acba46e702430627d5e2da154b4aaa0fca77d9b34ef7dba2e03cb89ee1",
    # session 6's second round: five collectors while the learned opinion was built
    "test12": "875974a6d1d996bb94f7f36e5ff4b93d592bcffb3278d4871469af40abfee69d",
    # session 6's third round: five collectors while round 10 tuned on test11 and test12
    "test13": "16646ebfe77cded31a655a6767cab766496b5f27b5bc1077c4a446a4ff8e2698",
    # session 7: five collectors in parallel
    "test14": "8d2e9f6174e3177e77b7cc4292235123fc0fcdcbc234dcc7cbda80902aa05d54",
    # session 7's second round: five collectors while round 12 tuned on test14
    "test15": "2d5de48ae04f3ac2851b0f6f846f9fdad19ee8ba94a470c65709f0aed12026da",
    # session 7's third round: five collectors while round 13 tuned on test15
    "test16": "a455b2a47d774e5c90a69275efb45474bde3ae231d5b68c38508623974684e67",
    # session 8: five collectors in parallel; records name the call they answer (`tool`)
    "test17": "c8227f1b787f08fa35bb40cab0ae398f299043c89d4d31f1c0bbc3d6f75d86d7",
    # session 8's second round: five collectors while round 15 tuned on test17
    "test18": "65695221501eab553cf1b18383509c5afc1b98062e98ee6863bd2145c1d3455e",
    # session 8's third round: five collectors while round 16 tuned on test18 (the search
    # tools' budget ran out: most texts were taken by script from fetched repositories)
    "test19": "3226ca8aefb0e9e2975b90c7681668fcc3cd53fa9a95ce4027198f441cc0d779",
}
PROVENANCE = {"transcript", "issue", "fixture", "docs", "file"}


@pytest.mark.parametrize(("split", "sha256"), FROZEN_SHA256.items())
def test_the_held_out_splits_are_frozen(split, sha256):
    assert hashlib.sha256((CORPUS / f"{split}.jsonl").read_bytes()).hexdigest() == sha256


def test_records_carry_label_provenance_and_split():
    dev, test, test2 = read_split("dev"), read_split("test"), read_split("test2")
    # More dev data, collected in session 4 (GUIDE.md): `dx-` ids, split "dev".
    dev_extra = read_split("dev_extra")
    ids = [r["id"] for r in dev + dev_extra + test + test2 + read_split("test3")]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 500
    assert all(r["id"].startswith("dx-") for r in dev_extra)
    for split, records in (("dev", dev), ("dev", dev_extra), ("test", test), ("test2", test2)):
        for r in records:
            assert r["label"] in LABELS, r["id"]
            assert r["kind"] in PROVENANCE, r["id"]  # no synthetic text in these files
            assert r["source"] and r["group"] and r["client"], r["id"]
            assert r["split"] == split and isinstance(r["is_error"], bool), r["id"]
    # The split is by the project a text comes from: no group on both sides.
    assert not {r["group"] for r in dev + dev_extra} & {r["group"] for r in test}
    # test3, the held-out split of session 4, shares no group and no text with any other.
    test3 = read_split("test3")
    for r in test3:
        assert r["label"] in LABELS and r["kind"] in PROVENANCE, r["id"]
        assert r["source"] and r["group"] and r["client"] and r["split"] == "test3", r["id"]
    assert {r["label"] for r in test3} == set(LABELS)
    others = dev + dev_extra + test + test2
    assert not {r["group"] for r in test3} & {r["group"] for r in others}
    assert not {r["text"] for r in test3} & {r["text"] for r in others}
    assert not {r["group"] for r in dev} & {r["group"] for r in test2}
    assert {r["label"] for r in test} == set(LABELS)
    assert {r["label"] for r in test2} == set(LABELS)
    assert {r["label"] for r in dev_extra} == set(LABELS)
    # The added records repeat no text, of their own or of another split.
    extra = [r["text"].strip() for r in dev_extra]
    assert len(extra) == len(set(extra))
    assert not set(extra) & {r["text"].strip() for r in dev + test + test2}
    # More dev data of session 4, second round (`dx2-` ids, split "dev"): from projects on no other split
    # (nor on test4's, the held-out split collected meanwhile), repeating no text.
    dev_extra2 = read_split("dev_extra2")
    for r in dev_extra2:
        assert r["id"].startswith("dx2-") and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == "dev", r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
        assert isinstance(r["is_error"], bool), r["id"]
    assert {r["label"] for r in dev_extra2} == set(LABELS)
    assert len({r["id"] for r in dev_extra2} | set(ids)) == len(ids) + len(dev_extra2)
    earlier = dev + dev_extra + test + test2 + test3
    assert not {r["group"] for r in dev_extra2} & {r["group"] for r in earlier}
    extra2 = [r["text"].strip() for r in dev_extra2]
    assert len(extra2) == len(set(extra2))
    assert not set(extra2) & {r["text"].strip() for r in earlier}
    # test4 shares no group and no text with any other split.
    test4 = read_split("test4")
    for r in test4:
        assert r["id"].startswith("t4-") and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == "test4", r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
    assert {r["label"] for r in test4} == set(LABELS)
    everything_else = earlier + dev_extra2
    assert not {r["group"] for r in test4} & {r["group"] for r in everything_else}
    assert not {r["text"] for r in test4} & {r["text"] for r in everything_else}
    assert len({r["id"] for r in test4} | {r["id"] for r in everything_else}) == len(test4) + len(
        everything_else
    )
    # More dev data of session 4, third round (`dx3-` ids, split "dev"): successes that mention errors and
    # agents' own failures, from projects on no other split (nor test5's), repeating no text.
    dev_extra3 = read_split("dev_extra3")
    for r in dev_extra3:
        assert r["id"].startswith("dx3-") and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == "dev", r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
        assert isinstance(r["is_error"], bool), r["id"]
    all_before = everything_else + test4
    assert not {r["group"] for r in dev_extra3} & {r["group"] for r in all_before}
    extra3 = [r["text"].strip() for r in dev_extra3]
    assert len(extra3) == len(set(extra3))
    assert not set(extra3) & {r["text"].strip() for r in all_before}
    assert len({r["id"] for r in dev_extra3} | {r["id"] for r in all_before}) == len(
        dev_extra3
    ) + len(all_before)
    # test5 shares no group, no text and no id with any other split.
    test5 = read_split("test5")
    for r in test5:
        assert r["id"].startswith("t5-") and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == "test5", r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
    assert {r["label"] for r in test5} == set(LABELS)
    others = all_before + dev_extra3
    assert not {r["group"] for r in test5} & {r["group"] for r in others}
    assert not {r["text"] for r in test5} & {r["text"] for r in others}
    assert not {r["id"] for r in test5} & {r["id"] for r in others}
    # More dev data of session 4, fourth round (`dx4-` ids, split "dev"), from projects on no other split.
    dev_extra4 = read_split("dev_extra4")
    for r in dev_extra4:
        assert r["id"].startswith("dx4-") and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == "dev", r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
        assert isinstance(r["is_error"], bool), r["id"]
    before4 = others + test5
    assert not {r["group"] for r in dev_extra4} & {r["group"] for r in before4}
    extra4 = [r["text"].strip() for r in dev_extra4]
    assert len(extra4) == len(set(extra4))
    assert not set(extra4) & {r["text"].strip() for r in before4}
    assert not {r["id"] for r in dev_extra4} & {r["id"] for r in before4}
    # test6 shares no group, no text and no id with any other split.
    test6 = read_split("test6")
    for r in test6:
        assert r["id"].startswith("t6-") and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == "test6", r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
    assert {r["label"] for r in test6} == set(LABELS)
    everything = before4 + dev_extra4
    assert not {r["group"] for r in test6} & {r["group"] for r in everything}
    assert not {r["text"] for r in test6} & {r["text"] for r in everything}
    assert not {r["id"] for r in test6} & {r["id"] for r in everything}


@pytest.mark.parametrize(
    "split",
    [f"test{n}" for n in range(7, 20)],
)
def test_the_newest_splits_share_no_group_text_or_id_with_the_others(split):
    records = read_split(split)
    prefix = "t" + split.removeprefix("test") + "-"
    for r in records:
        assert r["id"].startswith(prefix) and r["label"] in LABELS, r["id"]
        assert r["kind"] in PROVENANCE and r["split"] == split, r["id"]
        assert r["source"] and r["group"] and r["client"], r["id"]
        assert isinstance(r["is_error"], bool), r["id"]
    assert len(records) >= 250 and {r["label"] for r in records} == set(LABELS)
    texts = [r["text"] for r in records]
    assert len(texts) == len(set(texts)) and len({r["id"] for r in records}) == len(records)
    others = [
        r
        for path in sorted(CORPUS.glob("*.jsonl"))
        if path.stem != split
        for r in read_split(path.stem)
    ]
    assert not {r["group"] for r in records} & {r["group"] for r in others}
    assert not {t.strip() for t in texts} & {r["text"].strip() for r in others}
    assert not {r["id"] for r in records} & {r["id"] for r in others}


def test_wide_rules_meet_the_targets_on_the_held_out_split():
    evaluation = evaluate(read_records((CORPUS / "test.jsonl").open(encoding="utf-8")), "wide")
    definite = evaluation.num_definite
    successes = evaluation.count(
        ("success",), ("transient", "fixable", "unrecoverable", "ambiguous", "none")
    )
    falsely_detected = evaluation.count(
        ("success",), ("transient", "fixable", "unrecoverable", "ambiguous")
    )
    assert evaluation.num_correct >= 0.60 * definite
    assert evaluation.num_wrong <= 0.02 * definite
    assert falsely_detected <= 0.01 * successes


def test_eval_prints_a_table_and_a_confusion_matrix(tmp_path, capsys):
    path = tmp_path / "mine.jsonl"
    lines = [
        {"text": "Error: connect ECONNRESET 10.0.0.1:443", "label": "transient"},
        {
            "text": "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: a.txt: No such file or directory",
            "label": "fixable",
        },
        {"text": 'Found 2 matches for "Error:"', "label": "success"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert main(["toolerr", "--eval", str(path), "--rules", "wide"]) == 0
    assert (
        capsys.readouterr().out
        == f"""corpus: {path} (3 records)

rules: wide
definite failures (transient, fixable, unrecoverable): 2
  correct guidance      2  100.0%
  wrong guidance        0    0.0%
  no guidance           0    0.0%
ambiguous failures: 0
  detected              0      -
  guided anyway         0      -
successes: 1
  falsely detected      0    0.0%
  falsely guided        0    0.0%

confusion (rows: label, columns: prediction)
                   transient       fixable unrecoverable     ambiguous          none
     transient             1             0             0             0             0
       fixable             0             1             0             0             0
 unrecoverable             0             0             0             0             0
     ambiguous             0             0             0             0             0
       success             0             0             0             0             1
"""
    )
    assert main(["toolerr", "--eval", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.index("rules: paper") < out.index("rules: wide")


def test_eval_errors_name_the_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "x", "label": "success"}\n{"text": "y", "label": "maybe"}\n')
    assert main(["toolerr", "--eval", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"exactserve toolerr: error: {path}: line 2: label must be one of transient, fixable, "
        'unrecoverable, ambiguous, success, got "maybe"\n'
    )
    assert main(["toolerr"]) == 2
    assert (
        capsys.readouterr().err
        == "exactserve toolerr: error: give FILE.json or --eval CORPUS.jsonl\n"
    )


def test_eval_judges_a_record_after_the_call_it_names(tmp_path, capsys):
    # test13's text, which no rule shapes and the learned detector calls unrecoverable:
    # answering a file reader's call, it is a file's content and goes undetected
    text = next(
        r["text"] for r in read_split("test13") if r["id"] == "t13-copilot-sdk-permission-denied"
    )
    path = tmp_path / "calls.jsonl"
    lines = [
        {"text": text, "label": "unrecoverable"},
        {"text": text, "label": "unrecoverable", "tool": "Bash"},
        {"text": text, "label": "unrecoverable", "tool": "mcp__fs__read_text_file"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    predictions = [predict(record, "wide") for record in read_records(path.open())]
    assert predictions == ["unrecoverable", "unrecoverable", "none"]
    path.write_text('{"text": "x", "label": "success", "tool": ["Read"]}\n')
    assert main(["toolerr", "--eval", str(path)]) == 2
    assert capsys.readouterr().err == (
        f'exactserve toolerr: error: {path}: line 1: `tool` must be a string, got ["Read"]\n'
    )


@pytest.mark.parametrize(
    "path", sorted((CORPUS / "second_labels").glob("*.jsonl")), ids=lambda p: p.name
)
def test_second_labels_name_corpus_records_once_with_a_label(path):
    second = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    ids = {r["id"] for split in CORPUS.glob("*.jsonl") for r in read_split(split.stem)}
    assert len(second) >= 150 and len({s["id"] for s in second}) == len(second)
    assert all(s["id"] in ids and s["label"] in LABELS and s["why"] for s in second)
