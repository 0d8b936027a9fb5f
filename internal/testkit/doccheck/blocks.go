package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Kinds of marker.
const (
	// KindType marks an example of the Go type the marker names.
	KindType = "type"
	// KindFree marks an example that has no Go type.
	KindFree = "free"
)

// Block is one JSON example of a Markdown document.
type Block struct {
	// File is the document's path as given to Blocks.
	File string
	// Line is the 1-based line of the block's opening fence.
	Line int
	// Kind is KindType, KindFree, or empty when the block has no marker.
	Kind string
	// Type is the Go type a KindType marker names, such as "api.ErrorBody".
	Type string
	// JSON is the block's text, its fence's indentation removed.
	JSON []byte
}

// Where names the block for messages: "docs/api.md:136".
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Blocks returns the JSON examples of the Markdown document at path, in
// document order. A fenced block is a JSON example when its info string
// starts with "json" (any case), or when it is "http" and the message has
// a body that is a JSON object or array (the example is the body). It returns an error for an example whose
// fence is never closed, or whose marker is malformed.
func Blocks(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("doccheck: %w", err)
	}
	return parse(path, data)
}

// parse is Blocks on the document's text.
func parse(path string, data []byte) ([]Block, error) {
	var (
		blocks   []Block
		cur      *Block
		fence    string // the open fence's backticks, when in a block
		indent   string
		lastText string // the last non-blank line outside blocks
		http     bool   // the open block is an HTTP message
		n        int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" { // inside a fenced block
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
				if b, ok := finish(cur, http); ok {
					blocks = append(blocks, b)
				}
				fence, cur = "", nil
				continue
			}
			if cur != nil {
				cur.JSON = append(cur.JSON, strings.TrimPrefix(line, indent)+"\n"...)
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			info := strings.ToLower(strings.TrimSpace(strings.TrimLeft(trimmed, "`")))
			http = info == "http"
			if strings.HasPrefix(info, "json") || http {
				kind, typ, err := marker(lastText)
				if err != nil {
					return nil, fmt.Errorf("doccheck: %s:%d: %w", path, n, err)
				}
				indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
				cur = &Block{File: path, Line: n, Kind: kind, Type: typ}
			}
			continue
		}
		if trimmed != "" {
			lastText = trimmed
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("doccheck: %s: %w", path, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("doccheck: %s:%d: the JSON example's fence is never closed", path, cur.Line)
	}
	return blocks, nil
}

// marker reads a marker line: ("", "", nil) when line is no marker.
func marker(line string) (kind, typ string, err error) {
	body, ok := strings.CutPrefix(line, "<!--")
	if !ok {
		return "", "", nil
	}
	body, ok = strings.CutSuffix(body, "-->")
	if !ok {
		return "", "", fmt.Errorf("the marker %q does not end on its line", line)
	}
	body = strings.TrimSpace(body)
	if t, ok := strings.CutPrefix(body, "type:"); ok {
		t = strings.TrimSpace(t)
		if t == "" || strings.ContainsAny(t, " \t") {
			return "", "", fmt.Errorf("the marker %q must name one type", line)
		}
		return KindType, t, nil
	}
	if f, ok := strings.CutPrefix(body, "example:"); ok {
		if words := strings.Fields(f); len(words) == 0 || strings.TrimRight(words[0], ",;:") != KindFree {
			return "", "", fmt.Errorf("the marker %q: an example is \"free\"", line)
		}
		return KindFree, "", nil
	}
	return "", "", nil // another comment
}

// finish returns the example of the closed block b, an HTTP message when
// http: its body, or no example for a message with no JSON body.
func finish(b *Block, http bool) (Block, bool) {
	if b == nil {
		return Block{}, false
	}
	if http {
		_, body, _ := bytes.Cut(b.JSON, []byte("\n\n"))
		if t := bytes.TrimSpace(body); len(t) == 0 || (t[0] != '{' && t[0] != '[') {
			return Block{}, false
		}
		b.JSON = body
	}
	return *b, true
}
