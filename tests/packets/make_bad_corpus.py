"""Regenerate tests/packets/bad/ from the default example (run from the repository root).

Each bad packet is the default example with exactly one defect. After regenerating, rebuild
EXPECTED with `for f in *.yaml; do workbench check -q $f; done > EXPECTED` inside bad/ and
review the diff by hand: EXPECTED is the contract the corpus test asserts.
"""

from pathlib import Path

src = Path("packets/examples/fusion-tiling-llama-decode.yaml").read_text(encoding="utf-8")
out = Path("tests/packets/bad")


def sub(old, new, count=1):
    assert src.count(old) >= 1, old
    return src.replace(old, new, count)


cases = {
    "yaml-syntax": sub("    requests: 20000\n", "    requests: 20000\n   bad_indent: [\n"),
    "alias-bomb": sub(
        "seed: 20261129\n", 'seed: 20261129\nlol: &a ["x", "x"]\nlol2: &b [*a, *a, *a, *a]\n'
    ),
    "duplicate-key": sub("seed: 20261129\n", "seed: 20261129\nseed: 7\n"),
    "yaml11-boolean": sub("higher_is_better: true", "higher_is_better: yes"),
    "leading-zero-int": sub("requests: 20000", "requests: 020000"),
    "quoted-number": sub("rate_per_s: 250.0", 'rate_per_s: "400"'),
    "unknown-top-level-key": sub("candidates:\n", "candidate:\n"),
    "unknown-nested-key": sub("    max_batch: 8\n", "    max_batchsize: 8\n"),
    "values-not-a-list": sub("values: [512, 1024, 2048, 4096, 8192]", "values: 512"),
    "negative-delay": sub("max_queue_delay_ms: 2.0", "max_queue_delay_ms: -1"),
    "zero-rate": sub("rate_per_s: 250.0", "rate_per_s: 0"),
    "nan-sla": sub("p95_ms: 62.5", "p95_ms: .nan"),
    "inf-threshold": sub("threshold: 0.995", "threshold: .inf"),
    "weights-do-not-sum-to-one": sub(
        "weights: [0.38, 0.3, 0.2, 0.1, 0.02]", "weights: [0.38, 0.3, 0.2, 0.1, 0.12]"
    ),
    "weights-length-mismatch": sub(
        "weights: [0.38, 0.3, 0.2, 0.1, 0.02]", "weights: [0.5, 0.3, 0.2]"
    ),
    "unknown-format-version": sub("format: handoff-packet/1", "format: handoff-packet/2"),
    "role-from-other-topic": sub("role: runtime-systems-engineer", "role: observability-engineer"),
    "p99-below-p95": sub("p99_ms: 76.0", "p99_ms: 50.0"),
    "unknown-placement": sub("placement: central-queue", "placement: least-load"),
    "uppercase-id": sub("id: fusion-tiling-llama-decode", "id: Fusion_Tiling"),
    "gamma-without-cv": sub("process: poisson", "process: gamma"),
    "lognormal-without-cv": sub(
        "  service:\n    source: model\n",
        "  service:\n    source: distribution\n    dist: lognormal\n    mean_ms: 12.5\n",
    ),
    "bad-principal": sub("principal: rosa.diaz@example.com", "principal: Rosa Diaz"),
    "python-tag": sub("title: Llama", "title: !!python/object:os.system Llama"),
    "fractional-batch": sub("max_batch: 8", "max_batch: 8.5"),
    "missing-heads": sub("      heads: 24\n", ""),
    "kv-heads-not-dividing": sub("kv_heads: 8", "kv_heads: 5"),
    "compiled-shapes-descending": sub(
        "seq_len: [512, 1024, 2048, 4096]\n  fallback", "seq_len: [4096, 2048]\n  fallback"
    ),
    "duplicate-candidate": sub("  - name: aggressive-fusion", "  - name: standard-fusion"),
    "missing-trace-file": sub(
        "process: poisson\n      rate_per_s: 250.0",
        "process: trace\n      trace: traces/missing-arrivals.txt",
    ),
    "two-documents": src + "---\nformat: handoff-packet/1\n",
    "top-level-list": "- format: handoff-packet/1\n- id: x\n",
    "fusion-preset-typo": sub("fusion: aggressive", "fusion: agressive"),
    "zero-tile-dimension": sub(
        "gate_up_proj: {m: 32, n: 64, k: 64}", "gate_up_proj: {m: 32, n: 0, k: 64}"
    ),
    "warmup-too-large": sub("warmup_fraction: 0.1", "warmup_fraction: 0.95"),
    "negative-seed": sub("seed: 20261129", "seed: -3"),
    "gamma-cv-on-poisson": sub("rate_per_s: 250.0", "rate_per_s: 250.0\n      cv: 2.0"),
    "missing-role": sub(
        "  - role: runtime-systems-engineer\n    name: Rosa Diaz\n    principal: rosa.diaz@example.com\n",
        "",
    ),
    "text-field-null": sub("runtime: npu-rt 4.2.0", "runtime:"),
    "merge-key": sub("  batch_policy:\n", "  batch_policy:\n    <<: {max_batch: 4}\n"),
    # Line breaks YAML honours but line-based tools do not (issue 10, item 1).
    "cr-smuggled-section": sub(
        "seed: 20261129\n", "seed: 20261129  # reviewed\rcandidates: []\nseed_note: x\n"
    ),
    "nel-line-break": sub("title: Llama", "title: Llama\u0085"),
    "ls-line-break": sub("# cut launch", "# cut\u2028launch"),
    "ps-line-break": sub("name: Ada Park", "name: Ada\u2029Park"),
    # Tags on collections, escapes and bidi controls (item 7).
    "tag-on-sequence": sub(
        "values: [512, 1024, 2048, 4096, 8192]",
        "values: !!python/object/apply:os.system [512, 1024, 2048, 4096, 8192]",
    ),
    "tag-on-mapping": sub("  batch_policy:\n", "  batch_policy: !!python/object/apply:os.system\n"),
    "str-tag": sub("title: Llama", "title: !!str Llama"),
    "escape-in-text": sub("title: Llama", 'title: "\\e]0;pwned\\a\\e[2J" # Llama'),
    "bidi-escape-in-key": sub(
        "    max_batch: 8\n", '    max_batch: 8\n    "max\\u202e_batch": 8\n'
    ),
    "bidi-in-comment": sub("# cut launch", "# cut \u202eesruoc fo\u202c launch"),
    # Numbers past any physical range that used to crash `run` (item 10).
    "huge-integer": sub("hidden: 3072", "hidden: 1" + "0" * 400),
    "rate-underflow": sub("rate_per_s: 250.0", "rate_per_s: 5e-324"),
    "rate-too-small": sub("rate_per_s: 250.0", "rate_per_s: 1e-300"),
    "gamma-cv-too-large": sub(
        "process: poisson\n      rate_per_s: 250.0",
        "process: gamma\n      rate_per_s: 250.0\n      cv: 1e300",
    ),
    "head-dim-too-large": sub("head_dim: 128", "head_dim: 1000000"),
    "lognormal-cv-zero": sub(
        "  service:\n    source: model\n",
        "  service:\n    source: distribution\n    dist: lognormal\n    mean_ms: 12.5\n    cv: 0\n",
    ),
    "sram-fits-no-tile": sub(
        "    preset: npu-8c\n", "    preset: npu-8c\n    sram_kib_per_unit: 1\n"
    ),
}
for name, text in cases.items():
    (out / f"{name}.yaml").write_bytes(text.encode())  # bytes: no newline translation
(out / "empty.yaml").write_text("")
(out / "not-utf8.yaml").write_bytes(src.encode().replace(b"Ada Park", b"Ada P\xe4rk"))
(out / "nul-byte.yaml").write_bytes(src.encode().replace(b"Kenji", b"Ken\x00ji"))
print(len(cases) + 3)
