"""The strings every tokenizer test runs, one of each kind of text a user can type: emoji
sequences (ZWJ families, flags, skin tones, variation selectors), CJK, Arabic and Hebrew,
Indic and Thai, combining marks, whitespace runs and Unicode spaces, newlines, digits,
contractions, code, the empty text. Shared by tests/cli/tokenize_test.py and the bench."""

TEXTS = [
    "Hello world",
    "The cat sat on the mat.",
    "",
    " ",
    "   leading and trailing   ",
    "tabs\tand\nnewlines\n\n\r\nend\n",
    "I'm can't won't they'll we've she'd it's I'M DON'T You'RE",
    "digits 1234567890 3.14159 1,000,000 \u0663\u0664\u0665 \u2460\u2461 12345678901234",
    "emoji \U0001F44D\U0001F3FD \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 "
    "\U0001F3F3\uFE0F\u200D\U0001F308 \U0001F1EB\U0001F1F7\U0001F1EF\U0001F1F5 \u2764\uFE0F "
    "\U0001F937\U0001F3FD\u200D\u2640\uFE0F",
    "CJK \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587\u6587\u672c "
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "Arabic \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 "
    "Hebrew \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "combining e\u0301 a\u0308 n\u0303 \u00e9 Z\u0351\u0360a\u0358l\u0353g\u0335o",
    "\u00dcn\u00efc\u00f6d\u00e9 \u00c7af\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5\u00c4\u00d6 "
    "\u0130stanbul \u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3 stra\u00dfe",
    "whitespace runs:    \u00a0\u2003\u3000 x  \n  \n",
    "code: def f(x): return x**2  # comment\n\tif x >= 10: pass",
    "punctuation!!! ??? ... --- ((())) \"quotes\" 'single' \u00abguillemets\u00bb \u00bfqu\u00e9?",
    "Hindi \u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e "
    "Thai \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",
    "mixedCASE camelCase snake_case kebab-case https://example.com/a?b=c&d=e",
    "a",
    "\n",
]

# Texts that hold the tokenizers' special tokens (matched before the model).
SPECIAL_TEXTS = [
    "<|endoftext|> in the middle <|endoftext|>x",
    "[CLS] masked [MASK] word [SEP]",
    "<s>start</s> and <unk>",
]
