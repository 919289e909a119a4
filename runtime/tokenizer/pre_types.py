# ruff: noqa: E501 (llama.cpp's regexes, verbatim)
"""llama.cpp's pre-tokenizer table (src/llama-vocab.cpp, llama-cpp-python 0.3.36 vendor copy).

PRE_TOKENIZERS maps each `tokenizer.ggml.pre` value llama.cpp accepts to its pre-tokenizer
type and the vocabulary flags that value overrides (llama_vocab::impl::load). PATTERNS maps
each type to the regexes llama.cpp applies in order (llm_tokenizer_bpe) and whether words
are then byte-encoded GPT-2 style. The strings are llama.cpp's own, character for
character: pretokenize.py recognises llama.cpp's hand-written splitters by exact string,
as unicode.cpp does. tests/runtime/test_tokenizer_tables.py re-extracts both tables from
the C++ source and compares.
"""

from __future__ import annotations

from typing import Any

PRE_TOKENIZERS: dict[str, tuple[str, dict[str, Any]]] = {
    "default": ("DEFAULT", {}),
    "minicpm5": ("MINICPM5", {"ignore_merges": True}),
    "llama3": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "llama-v3": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "llama-bpe": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "falcon3": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "falcon-h1": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "pixtral": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "midm-2.0": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "lfm2": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "jina-v5-nano": ("LLAMA3", {"ignore_merges": True, "add_bos": True}),
    "deepseek-llm": ("DEEPSEEK_LLM", {"clean_spaces": False}),
    "deepseek-coder": ("DEEPSEEK_CODER", {"clean_spaces": False}),
    "deepseek-v3": ("DEEPSEEK3_LLM", {"clean_spaces": False}),
    "spark2_5": ("SPARK2_5", {"clean_spaces": False}),
    "youtu": ("YOUTU", {"clean_spaces": False, "ignore_merges": True}),
    "falcon": ("FALCON", {}),
    "mpt": ("MPT", {}),
    "starcoder": ("STARCODER", {}),
    "gpt-2": ("GPT2", {}),
    "phi-2": ("GPT2", {}),
    "jina-es": ("GPT2", {}),
    "jina-de": ("GPT2", {}),
    "gigachat": ("GPT2", {}),
    "jina-v2-es": ("GPT2", {}),
    "jina-v2-de": ("GPT2", {}),
    "a.x-4.0": ("GPT2", {}),
    "mellum": ("GPT2", {}),
    "modern-bert": ("GPT2", {}),
    "jais-2": ("JAIS2", {}),
    "gemma4": ("GEMMA4", {"escape_whitespaces": True}),
    "granite-embed-multi-311m": ("GEMMA4", {"escape_whitespaces": True}),
    "sarvam-moe": ("SARVAM_MOE", {"escape_whitespaces": True, "clean_spaces": False}),
    "jina-v1-en": ("GPT2", {"add_sep": True}),
    "jina-v2-code": ("GPT2", {"add_sep": True}),
    "roberta-bpe": ("GPT2", {"add_sep": True}),
    "whitespace": ("WHITESPACE", {}),
    "refact": ("REFACT", {}),
    "command-r": ("COMMAND_R", {"clean_spaces": False}),
    "qwen2": ("QWEN2", {"clean_spaces": False}),
    "deepseek-r1-qwen": ("QWEN2", {"clean_spaces": False}),
    "kormo": ("QWEN2", {"clean_spaces": False}),
    "f2llmv2": ("QWEN2", {"clean_spaces": False}),
    "qwen35": ("QWEN35", {"clean_spaces": False}),
    "stablelm2": ("STABLELM2", {}),
    "olmo": ("OLMO", {}),
    "dbrx": ("DBRX", {}),
    "smaug-bpe": ("SMAUG", {}),
    "poro-chat": ("PORO", {"clean_spaces": False}),
    "chatglm-bpe": ("CHATGLM4", {"no_bos_id": True}),
    "glm4": ("CHATGLM4", {"ignore_merges": True, "no_bos_id": True}),
    "glm5": ("CHATGLM4", {"ignore_merges": True, "no_bos_id": True}),
    "viking": ("VIKING", {"clean_spaces": False}),
    "jais": ("JAIS", {}),
    "tekken": ("TEKKEN", {"clean_spaces": False, "ignore_merges": True, "add_bos": True}),
    "smollm": ("SMOLLM", {"clean_spaces": False}),
    "codeshell": ("CODESHELL", {}),
    "bloom": ("BLOOM", {}),
    "gpt3-finnish": ("GPT3_FINNISH", {}),
    "exaone": ("EXAONE", {}),
    "exaone4": ("GPT2", {}),
    "exaone-moe": ("EXAONE_MOE", {}),
    "chameleon": ("CHAMELEON", {"add_bos": True, "clean_spaces": False}),
    "minerva-7b": ("MINERVA", {}),
    "megrez": ("QWEN2", {}),
    "gpt-4o": ("GPT4O", {"clean_spaces": False}),
    "llama4": ("GPT4O", {"clean_spaces": False}),
    "kanana2": ("GPT4O", {"clean_spaces": False}),
    "talkie": ("GPT4O", {"clean_spaces": False}),
    "granite-embed-multi-97m": (
        "GRANITE_EMB_MULTI",
        {"clean_spaces": False, "ignore_merges": True},
    ),
    "tiny_aya": ("TINY_AYA", {"clean_spaces": False}),
    "cohere2moe": ("TINY_AYA", {"clean_spaces": False}),
    "superbpe": ("SUPERBPE", {"clean_spaces": False}),
    "trillion": ("TRILLION", {"clean_spaces": False}),
    "granite-docling": ("GRANITE_DOCLING", {"clean_spaces": False}),
    "bailingmoe": ("BAILINGMOE", {"clean_spaces": False}),
    "bailingmoe2": ("BAILINGMOE", {"clean_spaces": False}),
    "llada-moe": ("BAILINGMOE", {"clean_spaces": False}),
    "seed-coder": ("SEED_CODER", {"clean_spaces": False}),
    "hunyuan": ("HUNYUAN", {"clean_spaces": False}),
    "hunyuan-dense": ("HUNYUAN_DENSE", {"clean_spaces": False}),
    "hy_v4": ("HY_V4", {"clean_spaces": False}),
    "joyai-llm": ("JOYAI_LLM", {"clean_spaces": False}),
    "kimi-k2": ("KIMI_K2", {"clean_spaces": False}),
    "ufakzeka": ("UFAKZEKA", {"clean_spaces": False}),
    "grok-2": ("GROK_2", {"clean_spaces": False}),
    "afmoe": ("AFMOE", {"clean_spaces": False}),
    "laguna": ("LAGUNA", {"clean_spaces": False}),
    "minimax-m2": ("MINIMAX_M2", {"clean_spaces": False}),
    "solar-open": ("SOLAR_OPEN", {"clean_spaces": False}),
    "mellum2": ("MELLUM2", {}),
}

_LLAMA3_0 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
_DEEPSEEK_LLM_0 = "[\r\n]"
_DEEPSEEK_LLM_4 = "[一-龥ࠀ-一가-\ud7ff]+"
_DEEPSEEK_LLM_5 = "\\p{N}+"
_DEEPSEEK3_LLM_0 = "\\p{N}{1,3}"
_DEEPSEEK3_LLM_1 = "[一-龥\u3040-ゟ゠-ヿ]+"
_DEEPSEEK3_LLM_2 = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
_SPARK2_5_3 = "\\p{N}"
_FALCON_1 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
_FALCON_2 = "[0-9][0-9][0-9]"
_STABLELM2_0 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
_PORO_0 = " ?[^(\\s|.,!?…。，、।۔،)]+"
_GPT4O_0 = "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
_LAGUNA_0 = "[^\\n]+|[\\n]+"

PATTERNS: dict[str, tuple[tuple[str, ...], bool]] = {
    "LLAMA3": ((_LLAMA3_0,), True),
    "JAIS2": (
        (
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
        ),
        True,
    ),
    "DBRX": ((_LLAMA3_0,), True),
    "SMAUG": ((_LLAMA3_0,), True),
    "DEEPSEEK_LLM": (
        (
            _DEEPSEEK_LLM_0,
            "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
            "\\s?[!-/:-~！-／：-～‘-‟\u3000-。]+",
            "\\s+$",
            _DEEPSEEK_LLM_4,
            _DEEPSEEK_LLM_5,
        ),
        True,
    ),
    "DEEPSEEK3_LLM": (
        (
            _DEEPSEEK3_LLM_0,
            _DEEPSEEK3_LLM_1,
            _DEEPSEEK3_LLM_2,
        ),
        True,
    ),
    "HUNYUAN_DENSE": (
        (
            _DEEPSEEK3_LLM_0,
            _DEEPSEEK3_LLM_1,
            _DEEPSEEK3_LLM_2,
        ),
        True,
    ),
    "JOYAI_LLM": (
        (
            _DEEPSEEK3_LLM_0,
            _DEEPSEEK3_LLM_1,
            _DEEPSEEK3_LLM_2,
        ),
        True,
    ),
    "HY_V4": (
        (
            _DEEPSEEK3_LLM_0,
            _DEEPSEEK3_LLM_1,
            _DEEPSEEK3_LLM_2,
        ),
        True,
    ),
    "SPARK2_5": (
        (
            _DEEPSEEK3_LLM_0,
            _DEEPSEEK3_LLM_1,
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
            _SPARK2_5_3,
        ),
        True,
    ),
    "YOUTU": (
        (
            "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥\u3040-ゟ゠-ヿ]+",
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "DEEPSEEK_CODER": (
        (
            _DEEPSEEK_LLM_0,
            "\\s?\\p{L}+",
            "\\s?\\p{P}+",
            _DEEPSEEK_LLM_4,
            _SPARK2_5_3,
        ),
        True,
    ),
    "FALCON": (
        (
            "[\\p{P}\\$\\+<=>\\^~\\|`]+",
            _FALCON_1,
            _FALCON_2,
        ),
        True,
    ),
    "STARCODER": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "REFACT": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "COMMAND_R": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "SMOLLM": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "CODESHELL": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "EXAONE": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "MINERVA": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "MELLUM2": (
        (
            _SPARK2_5_3,
            _FALCON_1,
        ),
        True,
    ),
    "GPT2": ((_FALCON_1,), True),
    "MPT": ((_FALCON_1,), True),
    "OLMO": ((_FALCON_1,), True),
    "JAIS": ((_FALCON_1,), True),
    "TRILLION": ((_FALCON_1,), True),
    "GRANITE_DOCLING": ((_FALCON_1,), True),
    "STABLELM2": ((_STABLELM2_0,), True),
    "QWEN2": ((_STABLELM2_0,), True),
    "HUNYUAN": ((_STABLELM2_0,), True),
    "SOLAR_OPEN": ((_STABLELM2_0,), True),
    "QWEN35": (
        (
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "PORO": ((_PORO_0,), True),
    "BLOOM": ((_PORO_0,), True),
    "GPT3_FINNISH": ((_PORO_0,), True),
    "CHATGLM4": ((_LLAMA3_0,), True),
    "VIKING": (
        (
            _PORO_0,
            _SPARK2_5_3,
        ),
        True,
    ),
    "TEKKEN": (
        (
            "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "CHAMELEON": (
        (
            "<sentinel:[0-9]+>",
            "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
            "([\\t\\n]|    |  )",
            _SPARK2_5_3,
            "[\\p{P}!-/:-@\\[-`{-~]",
            _FALCON_1,
        ),
        True,
    ),
    "GPT4O": ((_GPT4O_0,), True),
    "MINIMAX_M2": ((_GPT4O_0,), True),
    "GRANITE_EMB_MULTI": (
        (
            "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "TINY_AYA": (
        (
            "\\d{1,3}(?=(?:\\d{3})*\\b)",
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "KIMI_K2": (("\\p{Han}+",), True),
    "SUPERBPE": (
        (
            _DEEPSEEK_LLM_5,
            "(?=(\\d{3})+(?!\\d))",
        ),
        True,
    ),
    "BAILINGMOE": (
        (
            "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "SEED_CODER": (
        (
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "UFAKZEKA": (
        (
            "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "GROK_2": ((_STABLELM2_0,), True),
    "AFMOE": (
        (
            "\\p{AFMoE_digits}",
            "[一-鿿㐀-䶿豈-\ufaff\u3040-ゟ゠-ヿ･-ﾟ⼀-\u2fdfเ-\u0e7f\u0e80-\u0effក-\u17ffက-႟ꩠ-ꩿꧠ-\ua9ff가-\ud7afᄀ-ᇿ]+",
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "LAGUNA": (
        (
            _LAGUNA_0,
            _STABLELM2_0,
        ),
        True,
    ),
    "EXAONE_MOE": (
        (
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "GEMMA4": ((_LAGUNA_0,), False),
    "SARVAM_MOE": ((_LAGUNA_0,), False),
    "MINICPM5": (
        (
            _DEEPSEEK3_LLM_0,
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        ),
        True,
    ),
    "WHITESPACE": (("\\S+",), False),
    "DEFAULT": (
        (
            "[\\p{P}\\$\\+<=>\\^~\\|]+",
            _FALCON_1,
            _DEEPSEEK_LLM_5,
            _FALCON_2,
        ),
        True,
    ),
}
