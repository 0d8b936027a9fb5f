package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a valid document of 200 steps, about 30 KB, with every
// shape of doc that a plan-like document has: nested structs, raw input,
// maps, times and numbers.
func benchDoc() []byte {
	var b strings.Builder
	b.WriteString(`{"name":"bench","count":12,"on":true,"at":"2024-05-01T10:00:00Z","wait":"1m","limits":{"max":3},"steps":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"step-%d","retry":{"maxAttempts":%d},"input":{"url":"https://example.com/%d","body":{"a":[1,2,3],"b":null}},"tags":{"team":"core","tier":"%d"}}`, i, i%5, i, i%3)
	}
	b.WriteString(`],"byId":{"1":"a","2":"b"},"extra":{"x":{"v":1}}}`)
	return []byte(b.String())
}

// BenchmarkDecode measures Decode on benchDoc: the strict scan and the
// final json.Unmarshal. BenchmarkUnmarshal is encoding/json alone, for
// comparison.
func BenchmarkDecode(b *testing.B) {
	bench(b, func(data []byte) error { return Decode(data, &doc{}, Options{}) })
}

func BenchmarkUnmarshal(b *testing.B) {
	bench(b, func(data []byte) error { return json.Unmarshal(data, &doc{}) })
}

// BenchmarkValid measures Valid on benchDoc.
func BenchmarkValid(b *testing.B) {
	bench(b, func(data []byte) error { return Valid(data, Options{}) })
}

// bench runs check on benchDoc, which it must accept.
func bench(b *testing.B, check func(data []byte) error) {
	data := benchDoc()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := check(data); err != nil {
			b.Fatal(err)
		}
	}
}
