package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"go.yaml.in/yaml/v3"
)

// yamlToJSON converts a YAML document to JSON under YAML 1.2's rules,
// with one parser, once: only true and false are booleans (`y`, `on` and
// `no` are strings), and a mapping key must be a string. It rejects YAML
// that is not exactly one document, duplicate keys, keys that are not
// strings (a quoted "1" is one), tags other than the core schema's, a
// number JSON cannot hold (.inf, .nan), nesting deeper than maxDepth, and
// aliases that expand to more than maxValues values. Merge keys (<<)
// merge, explicit keys winning; a timestamp stays the text it was
// written as.
func yamlToJSON(data []byte, maxDepth, maxValues int) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, single("", CodeMalformed, "the document is empty")
		}
		return nil, single("", CodeMalformed, "invalid YAML: %v", err)
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, single("", CodeMalformed, "more than one YAML document; a plan is exactly one")
	}
	c := yamlConverter{maxDepth: maxDepth, left: maxValues}
	v, err := c.value(&root, "", 0)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, single("", CodeMalformed, "invalid YAML: %v", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// yamlConverter turns YAML nodes into JSON values, within its bounds.
type yamlConverter struct {
	maxDepth int
	left     int // values still allowed: aliases cannot blow the document up
}

// value converts n, at JSON path path and nesting depth depth.
func (c *yamlConverter) value(n *yaml.Node, path string, depth int) (any, error) {
	if c.left--; c.left < 0 {
		return nil, single(path, CodeMalformed, "the YAML expands to too many values (check its aliases)")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, single("", CodeMalformed, "the document is empty")
		}
		return c.value(n.Content[0], path, depth)
	case yaml.AliasNode:
		return c.value(n.Alias, path, depth)
	case yaml.MappingNode, yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!map" && tag != "!!seq" {
			return nil, single(path, CodeMalformed, "line %d: the tag %s is not supported", n.Line, quote(n.Tag))
		}
		return c.collection(n, path, depth)
	default:
		return scalar(n, path)
	}
}

// collection converts a mapping or sequence node, one level deeper.
func (c *yamlConverter) collection(n *yaml.Node, path string, depth int) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		if depth+1 > c.maxDepth {
			return nil, single(path, CodeTooDeep, "nested deeper than the limit of %d", c.maxDepth)
		}
		return c.mapping(n, path, depth+1)
	default:
		if depth+1 > c.maxDepth {
			return nil, single(path, CodeTooDeep, "nested deeper than the limit of %d", c.maxDepth)
		}
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.value(e, indexPath(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
}

// mapping converts mapping node n, its merge keys' mappings merged under
// its own keys.
func (c *yamlConverter) mapping(n *yaml.Node, path string, depth int) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, single(path, CodeMalformed, "line %d: mapping key %s is %s, not a string; quote it",
				k.Line, keyName(k.Value), yamlKind(k))
		}
		if _, dup := out[k.Value]; dup {
			return nil, single(path, CodeMalformed, "line %d: key %s already set", k.Line, keyName(k.Value))
		}
		val, err := c.value(v, childPath(path, k.Value), depth)
		if err != nil {
			return nil, err
		}
		out[k.Value] = val
	}
	for _, m := range merges {
		if err := c.merge(out, m, path, depth); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// merge adds the keys of the mapping (or sequence of mappings) m that out
// does not have.
func (c *yamlConverter) merge(out map[string]any, m *yaml.Node, path string, depth int) error {
	for m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	sources := []*yaml.Node{m}
	if m.Kind == yaml.SequenceNode {
		sources = m.Content
	}
	for _, src := range sources {
		v, err := c.value(src, path, depth-1)
		if err != nil {
			return err
		}
		fields, ok := v.(map[string]any)
		if !ok {
			return single(path, CodeMalformed, "line %d: a merge key (<<) takes a mapping", m.Line)
		}
		for k, fv := range fields {
			if _, set := out[k]; !set {
				out[k] = fv
			}
		}
	}
	return nil
}

// scalar converts scalar node n by its core-schema tag.
func scalar(n *yaml.Node, path string) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, single(path, CodeMalformed, "line %d: %v", n.Line, err)
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, single(path, CodeMalformed, "line %d: %s is not a number JSON can hold", n.Line, n.Value)
		}
		return v, nil
	default:
		return nil, single(path, CodeMalformed, "line %d: the tag %s is not supported", n.Line, quote(n.Tag))
	}
}

// yamlKind names the type of a mapping key that is not a string.
func yamlKind(k *yaml.Node) string {
	switch k.ShortTag() {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a bool"
	case "!!null":
		return "null"
	default:
		if k.Kind != yaml.ScalarNode {
			return "a " + map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "sequence", yaml.AliasNode: "alias"}[k.Kind]
		}
		return fmt.Sprintf("tagged %s", k.ShortTag())
	}
}
