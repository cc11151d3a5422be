package canon

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON is the form of a JSON document (json, jsonb, MySQL's JSON): jsonb's
// text output. Object keys sorted shorter first, then bytewise; of duplicate
// keys the last; ", " between items and ": " after keys, no other
// whitespace; strings with only ", \, and control characters escaped
// (\b \f \n \r \t, others \u00xx), every other character as is; numbers as
// numeric reads them (1E2 is 100, 1.50 stays 1.50, -0 is 0). With
// doubleNumbers, numbers are read as float8 and printed as Float does.
func JSON(doc string, doubleNumbers bool) (string, error) {
	p := jsonParser{s: doc, doubles: doubleNumbers}
	p.space()
	n, err := p.value(0)
	if err != nil {
		return "", fmt.Errorf("json: %w at offset %d", err, p.i)
	}
	p.space()
	if p.i != len(p.s) {
		return "", fmt.Errorf("json: unexpected %q after the document at offset %d", p.s[p.i], p.i)
	}
	var b strings.Builder
	b.Grow(len(doc))
	n.write(&b)
	return b.String(), nil
}

// maxJSONDepth bounds nesting, so that no input exhausts the stack.
const maxJSONDepth = 10_000

type jsonNode struct {
	scalar string // rendered scalar; "" for an object or array
	object bool
	keys   []string // object keys, rendered
	vals   []*jsonNode
}

func (n *jsonNode) write(b *strings.Builder) {
	switch {
	case n.scalar != "":
		b.WriteString(n.scalar)
	case n.object:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, k)
			b.WriteString(": ")
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	default:
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			v.write(b)
		}
		b.WriteByte(']')
	}
}

// writeJSONString writes s quoted as PostgreSQL's escape_json does.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

type jsonParser struct {
	s       string
	i       int
	doubles bool
}

var errJSONSyntax = errors.New("invalid JSON")

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("nested too deeply")
	}
	if p.i >= len(p.s) {
		return nil, errJSONSyntax
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		writeJSONString(&b, s)
		return &jsonNode{scalar: b.String()}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				return &jsonNode{scalar: lit}, nil
			}
		}
		return nil, errJSONSyntax
	}
}

func (p *jsonParser) object(depth int) (*jsonNode, error) {
	p.i++ // {
	n := &jsonNode{object: true}
	at := map[string]int{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return n, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, errJSONSyntax
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, errJSONSyntax
		}
		p.i++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if j, ok := at[k]; ok {
			n.vals[j] = v // the last of duplicate keys, as jsonb keeps
		} else {
			at[k] = len(n.keys)
			n.keys = append(n.keys, k)
			n.vals = append(n.vals, v)
		}
		p.space()
		if p.i >= len(p.s) {
			return nil, errJSONSyntax
		}
		if p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.s[p.i] != '}' {
			return nil, errJSONSyntax
		}
		p.i++
		break
	}
	// jsonb's key order: shorter first, then bytewise.
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ka, kb := n.keys[a], n.keys[b]
		if len(ka) != len(kb) {
			return len(ka) - len(kb)
		}
		return strings.Compare(ka, kb)
	})
	keys, vals := make([]string, len(idx)), make([]*jsonNode, len(idx))
	for i, j := range idx {
		keys[i], vals[i] = n.keys[j], n.vals[j]
	}
	n.keys, n.vals = keys, vals
	return n, nil
}

func (p *jsonParser) array(depth int) (*jsonNode, error) {
	p.i++ // [
	n := &jsonNode{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return n, nil
	}
	for {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, errJSONSyntax
		}
		if p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.s[p.i] != ']' {
			return nil, errJSONSyntax
		}
		p.i++
		return n, nil
	}
}

// str reads a string token and returns its characters.
func (p *jsonParser) str() (string, error) {
	p.i++ // "
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", errors.New("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", errors.New("control character in a string")
		case c != '\\':
			// Runs of plain bytes at once.
			j := p.i
			for j < len(p.s) && p.s[j] != '"' && p.s[j] != '\\' && p.s[j] >= 0x20 {
				j++
			}
			b.WriteString(p.s[p.i:j])
			p.i = j
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			return "", errors.New("unterminated string")
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				if !strings.HasPrefix(p.s[p.i:], `\u`) {
					return "", errors.New("unpaired surrogate in \\u escape")
				}
				p.i += 2
				r2, err := p.hex4()
				if err != nil {
					return "", err
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return "", errors.New("invalid surrogate pair in \\u escape")
				}
			}
			b.WriteRune(r)
		default:
			return "", fmt.Errorf("invalid escape \\%c", e)
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, errors.New("short \\u escape")
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, errors.New("invalid \\u escape")
	}
	p.i += 4
	return rune(v), nil
}

func (p *jsonParser) number() (*jsonNode, error) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	text, err := numberText(p.s[start:p.i], p.doubles)
	if err != nil {
		p.i = start
		return nil, err
	}
	return &jsonNode{scalar: text}, nil
}

// numberText is the form of a JSON number: as numeric reads it, or as a
// float8 with doubles when a double holds it.
func numberText(tok string, doubles bool) (string, error) {
	if !validJSONNumber(tok) {
		return "", fmt.Errorf("invalid number %q", tok)
	}
	if doubles {
		// A number no double holds keeps its exact form: it differs from
		// whatever the target has.
		if f, err := strconv.ParseFloat(tok, 64); err == nil {
			return Float(f, 64), nil
		} else if !errors.Is(err, strconv.ErrRange) {
			return "", fmt.Errorf("number %q: %w", tok, err)
		}
	}
	d, err := parseDecimal(tok)
	if err != nil {
		return "", fmt.Errorf("number %q: %w", tok, err)
	}
	return d.String(), nil
}

// validJSONNumber checks JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
