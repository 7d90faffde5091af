// Generates js_responses.jsonl: one resume list per line, exactly as a
// Strands TypeScript client sends it (JSON.stringify). Each case's first
// interruptId names the case. Regenerate with:
//
//	node gen_responses.js > js_responses.jsonl
//	python3 gen_responses.py < js_responses.jsonl > py_responses.jsonl
//
// Cases whose id starts with "num:" hold numbers whose text Python prints
// differently (1.5e-07 vs 1.5e-7).
const r = (id, response) => ({ interruptResponse: { interruptId: id, response } });
const cases = [
  [r("v1:tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9", "y")],
  [r("str:plain", "approve")],
  [r("str:html", "<script>alert('x') && 1 > 0</script>")],
  [r("str:quotes-backslash", 'say "hi" \\ C:\\path\\to \\"x\\"')],
  [r("str:whitespace", "line1\nline2\r\n\ttabbed\b\f")],
  [r("str:controls", "\u0000\u0001\u0007\u000b\u000e\u001f\u007f")],
  [r("str:unicode", "café naïve 日本語 😀 👍🏽")],
  [r("str:separators", "a\u2028b\u2029c\ufeffd")],
  [r("str:lone-surrogate", "x\ud800y\udfffz")],
  [r("str:slash", "a/b</c>")],
  [r("str:empty", "")],
  [r("id:<&>\"\\ é😀\u2028\n", "id with odd characters")],
  [r("bool:true", true)],
  [r("bool:false", false)],
  [r("null", null)],
  [r("int:zero", 0)],
  [r("int:negative", -42)],
  [r("int:big", 9007199254740991)],
  [r("float:simple", 3.25)],
  [r("float:tenth", 0.1)],
  [r("float:negative", -1.5)],
  [r("num:tiny", 1.5e-7)],
  [r("float:huge", 1e21)],
  [r("float:huge-negative", -2.5e300)],
  [r("object", { approved: true, reason: "<ok> & \"fine\"", count: 3, extra: null, nested: { list: [1, "two", false] } })],
  [r("object:empty", {})],
  [r("object:key-order", { z: 1, a: 2, m: { y: "é", b: "\u2028" } })],
  [r("object:odd-keys", { "<k>": "v", "é": "\n", "": 0 })],
  [r("array", [1, "two", null, true, { three: [3] }, []])],
  [r("array:empty", [])],
  [
    r("many:v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840", "a"),
    r("many:v1:before_tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9", { ok: false }),
    r("many:v1:tool_call:t2:da3551f3-154b-5978-827e-50ac387877ee", null),
  ],
];
for (const c of cases) console.log(JSON.stringify(c));
