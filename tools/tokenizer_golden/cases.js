// The hand-picked strings of the tokenizer golden file, grouped by what they exercise.
// Only characters assigned in Unicode 15.1 or earlier (see generate.js).
"use strict";

const long_word = "supercalifragilisticexpialidocious".repeat(20);

const fixed_cases = {
  empty: [""],
  ascii_prose: [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
      + "age of foolishness, it was the epoch of belief, it was the epoch of incredulity.",
    "GPT-2 is a large transformer-based language model with 1.5 billion parameters.",
    "Once upon a time, there was a little girl named Alice. She lived in a small house.",
    "HELLO WORLD. ALL CAPS SENTENCE WITH SHOUTING!!!",
    "lowercase only with no punctuation at all",
    "MiXeD CaSe WoRdS aNd CamelCaseIdentifiers likeThisOne",
    "Dr. Smith arrived at 5 p.m. on Jan. 3rd, e.g. yesterday (i.e. not today).",
    "\"Quoted text,\" she said. 'Single quotes' too.",
    "A sentence ending with a question?",
    "Semi;colons: and, commas - and -- dashes --- everywhere...",
    "The year 2023 had 365 days; 2024 had 366.",
    "hyphenated-words and under_scored_words and slash/separated/words",
    "Tabs\tin\tthe\tmiddle",
    "Line one\nLine two\nLine three",
    "Windows\r\nline\r\nendings\r\n",
  ],
  accents: [
    "café", "naïve résumé", "Über straße", "niño año mañana", "Ångström", "Crème brûlée à la carte",
    "Œuvre façade coöperate", "Zürich Genève Besançon", "ÀÉÎÕÜ àéîõü", "Ørsted Æsir ðþ",
    "e\u0301 (e + combining acute) vs \u00e9", "Ṫḧë ṻṅïċöḋë", "Dvořák Łódź Şişli",
  ],
  cjk: [
    "你好，世界！", "我爱自然语言处理。", "中文没有空格分词的问题很有意思", "東京都は日本の首都です。",
    "ひらがなとカタカナ", "こんにちは世界", "ラーメンを食べたい", "안녕하세요 세계",
    "한국어 텍스트 토큰화", "漢字かなカナ交じり文", "全角スペース\u3000区切り", "中文 English 混合 text",
  ],
  emoji: [
    "😀", "Hello 👋 world 🌍", "👍🏽", "👨\u200d👩\u200d👧\u200d👦 family", "🏳\ufe0f\u200d🌈",
    "🇺🇸🇯🇵🇫🇷", "❤\ufe0f", "🧑🏿\u200d💻 coder", "😂😂😂😂😂", "emoji🎉at🎉word🎉boundaries",
    "🤷\u200d♀\ufe0f", "👩🏻\u200d🤝\u200d👩🏼", "✅ done ❌ failed ⚠\ufe0f warn",
  ],
  rtl: [
    "مرحبا بالعالم", "السلام عليكم ورحمة الله", "שלום עולם", "עברית עם ניקוד: שָׁלוֹם",
    "Mixed English and العربية text", "الرقم ١٢٣ والعدد 456",
  ],
  combining_scripts: [
    "नमस्ते दुनिया", "हिन्दी में लिखा गया वाक्य।", "संख्या १२३४",
    "สวัสดีชาวโลก", "ภาษาไทยไม่มีช่องว่าง",
    "ตัวเลข ๑๒๓", "Ελληνικά γράμματα", "Привет, мир!", "Съешь же ещё этих мягких французских булок",
  ],
  whitespace: [
    " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\t\t\tindented", "    four spaces",
    "word   ", "word\n", "word \n", "trailing tab\t", "  leading two", "a  b", "a   b", "a\tb",
    "a\t b", "a \tb", "a\n\nb", "a\n b", "a \n b", "a\r\n\r\nb", "end with newlines\n\n\n",
    "x  !", "x\n!", "x \t !", "x  123", "x\n123", "  \u00e9t\u00e9", "\u00a0nbsp", "a\u00a0b",
    "a\u00a0\u00a0b", "a\u3000b", "a\u2028b", "a\u2029b", "a\u0085b", "a\u0085\u0085b",
    "a\u000bb\u000cc", "\ufeffBOM at start", "a\ufeffb", "a\u2003\u2003b", "a\u200bb",
    "a\u001cb\u001fc", " \u00a0 \u3000 x",
  ],
  code: [
    "#include <iostream>\nint main() {\n    std::cout << \"hi\\n\";\n    return 0;\n}\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "template <class T>\nauto f(T&& x) -> decltype(x) { return std::forward<T>(x); }",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "class Foo:\n\tdef __init__(self):\n\t\tself.x = {'a': 1, \"b\": [2, 3]}\n",
    "if __name__ == \"__main__\":\n    main()\n",
    "const x = (a, b) => a ?? b; // comment",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "<div class=\"main\"><p>Hello</p></div>",
    "{\"key\": \"value\", \"list\": [1, 2.5, null, true]}",
    "x+=1;y-=2;z*=3;w/=4;v%=5;u<<=1;t>>=2;",
    "$ ls -la /usr/local/bin | grep -v '^d' > out.txt 2>&1",
    "fn main() { println!(\"{}\", 1 + 2); }",
  ],
  numbers: [
    "0", "7", "42", "123456789012345678901234567890", "3.14159265358979", "1,000,000",
    "-273.15", "1e-10", "0x1F2E3D", "2024-06-11", "12:34:56", "Version 1.2.3-rc4",
    "٣", "٠١٢٣٤٥٦٧٨٩", "x² + y³ = z¹", "Ⅻ", "Ⅰ Ⅱ Ⅲ Ⅳ Ⅴ", "½ cup", "①②③", "１２３ fullwidth",
    "⁴⁵⁶", "phone: +1 (555) 123-4567", "$19.99 and €20,50", "100%", "3rd 21st 2nd",
    "𝟘𝟙𝟚", "abc123def456", "123abc", "١٢٣abc",
  ],
  urls_emails: [
    "https://www.example.com/path/to/page?query=1&other=two#fragment",
    "http://localhost:8080/api/v1/users",
    "Visit https://github.com/openai/gpt-2 for details.",
    "ftp://files.example.org/pub/file.tar.gz",
    "user.name+tag@example.co.uk",
    "Contact: john.doe@example.com, jane_doe99@mail.example.org",
    "www.example.com/~user/index.html",
  ],
  contractions: [
    "it's", "don't", "we're", "they've", "I'm", "you'll", "he'd", "IT'S", "DON'T", "WE'RE",
    "it\u2019s", "don\u2019t", "rock 'n' roll", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d",
    "''", "'''s", "y'all", "'tis", "o'clock", "the dog's bone", "James's book", "the '90s",
    "She said 'hello' and 'goodbye'", "I'd've", "'S 'T 'RE", " 's", "x 'll", "'sup",
  ],
  punctuation: [
    "!!!", "???", "...", "?!?!", "--", "---", "***", "###", "!@#$%^&*()", "...and then...",
    "a.b.c.d", "(((nested)))", "[[brackets]]", "{{braces}}", "<<<>>>", "::", "->", "=>",
    "«guillemets»", "„German quotes“", "“curly” ‘quotes’", "—em dash— –en dash–", "•bullet",
    "¿Qué? ¡Sí!", "…", "§ 42 ¶", "©®™",
  ],
  special: [
    "<|endoftext|>",
    "Hello<|endoftext|>World",
    "Hello <|endoftext|> World",
    "<|endoftext|><|endoftext|>",
    "first document.<|endoftext|>second document.",
    "  <|endoftext|>  ",
    "\n<|endoftext|>\n",
    "<|endoftext|",
    "<|endoftext|>>",
    "<<|endoftext|>",
    "<|ENDOFTEXT|>",
    "<|endoftext|>'s",
  ],
  single_chars: [
    "a", "Z", "0", "!", "'", "\"", "\\", "~", "`", "\u0000", "\u0001", "\u007f", "\u0080",
    "\u00ad", "\u00a0", "é", "ß", "中", "あ", "한", "😀", "\u{10ffff}", "\ufffd", "\u0300",
    "Ä", "ÿ", "Ā", "ſ", "Ω", "я",
  ],
  long_words: [
    long_word,
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "a".repeat(500),
    "ab".repeat(300),
    "9".repeat(400),
    "!".repeat(300),
    " ".repeat(200),
    "\n".repeat(100) + "x",
    "中".repeat(300),
    "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft",
    "😀".repeat(100),
  ],
};

// Every whitespace run from `runs` between every left and right context: the `\s+(?!\S)` rule.
function whitespace_cases() {
  const lefts = ["", "word"];
  const runs = [" ", "  ", "   ", "\t", "\n", "\n\n", " \t", "\t ", " \n", "\n ", "\r\n",
                "\u00a0", " \u00a0", "\u00a0 ", "\u3000 "];
  const rights = ["", "word", "123", "!", "'s", "é", "中", "😀"];
  const out = [];
  for (const l of lefts)
    for (const r of runs)
      for (const rt of rights)
        if (l !== "" || rt !== "")
          out.push(l + r + rt);
  return out;
}

module.exports = { fixed_cases, whitespace_cases };
