package canon

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An array's form is PostgreSQL's array text of its elements' text output:
// {1,NULL,-1}, {{a,"b c"},{NULL,""}}, [0:1]={1,2} for other lower bounds.
// Element text is the element type's output, not its canonical form
// (elements of bool print t and f, of numeric keep their scale), except that
// DoubleNumbers reads numeric and float elements as float8.

// arrayNode is one element of an array (leaf) or one dimension's list.
type arrayNode struct {
	leaf bool
	val  Value
	kids []*arrayNode
}

// arraySpace is array_out's idea of white space.
func arraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// writeArrayElem writes an element as array_out does: quoted when empty,
// spelled NULL, or holding a quote, backslash, brace, comma or white space;
// quotes and backslashes escaped with a backslash.
func writeArrayElem(b *strings.Builder, s string) {
	quote := s == "" || strings.EqualFold(s, "NULL")
	for i := 0; i < len(s) && !quote; i++ {
		c := s[i]
		quote = c == '"' || c == '\\' || c == '{' || c == '}' || c == ',' || arraySpace(c)
	}
	if !quote {
		b.WriteString(s)
		return
	}
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
}

func (n *arrayNode) write(b *strings.Builder) {
	if n.leaf {
		if !n.val.Valid {
			b.WriteString("NULL")
		} else {
			writeArrayElem(b, n.val.S)
		}
		return
	}
	b.WriteByte('{')
	for i, k := range n.kids {
		if i > 0 {
			b.WriteByte(',')
		}
		k.write(b)
	}
	b.WriteByte('}')
}

// parseArrayText reads PostgreSQL's array output: an optional dimension
// decoration ([1:2]=), then nested braces of elements separated by commas.
func parseArrayText(s string) (decoration string, root *arrayNode, err error) {
	if strings.HasPrefix(s, "[") {
		eq := strings.Index(s, "={")
		if eq < 0 {
			return "", nil, fmt.Errorf("array %q: dimensions without a value", s)
		}
		decoration, s = s[:eq+1], s[eq+1:]
	}
	p := arrayParser{s: s}
	root, err = p.list(0)
	if err == nil && p.i != len(s) {
		err = errors.New("text after the array")
	}
	if err != nil {
		return "", nil, fmt.Errorf("array %q: %w", s, err)
	}
	return decoration, root, nil
}

type arrayParser struct {
	s string
	i int
}

func (p *arrayParser) list(depth int) (*arrayNode, error) {
	if depth > 6 { // PostgreSQL's MAXDIM
		return nil, errors.New("more than 6 dimensions")
	}
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, errors.New("expected {")
	}
	p.i++
	n := &arrayNode{}
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return n, nil
	}
	for {
		if p.i >= len(p.s) {
			return nil, errors.New("unterminated array")
		}
		var kid *arrayNode
		var err error
		switch p.s[p.i] {
		case '{':
			kid, err = p.list(depth + 1)
		case '"':
			kid, err = p.quoted()
		default:
			kid = p.bare()
		}
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, kid)
		if p.i >= len(p.s) {
			return nil, errors.New("unterminated array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return n, nil
		default:
			return nil, fmt.Errorf("unexpected %q", p.s[p.i])
		}
	}
}

func (p *arrayParser) quoted() (*arrayNode, error) {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '\\':
			if p.i >= len(p.s) {
				return nil, errors.New("unterminated element")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case '"':
			return &arrayNode{leaf: true, val: V(b.String())}, nil
		default:
			b.WriteByte(c)
		}
	}
	return nil, errors.New("unterminated element")
}

func (p *arrayParser) bare() *arrayNode {
	j := p.i
	for j < len(p.s) && p.s[j] != ',' && p.s[j] != '}' {
		j++
	}
	s := p.s[p.i:j]
	p.i = j
	if strings.EqualFold(s, "NULL") {
		return &arrayNode{leaf: true}
	}
	return &arrayNode{leaf: true, val: V(s)}
}

// mapLeaves applies f to every non-NULL element.
func (n *arrayNode) mapLeaves(f func(string) (string, error)) error {
	if n.leaf {
		if !n.val.Valid {
			return nil
		}
		s, err := f(n.val.S)
		n.val.S = s
		return err
	}
	for _, k := range n.kids {
		if err := k.mapLeaves(f); err != nil {
			return err
		}
	}
	return nil
}

// numberElems reports whether DoubleNumbers changes elements of kind k.
func numberElems(k Kind) bool { return k == KindNumeric || k == KindFloat4 || k == KindFloat8 }

// asDouble is a numeric or float element's text read as a float8; one no
// double holds keeps its exact form.
func asDouble(s string) (string, error) {
	out, err := FloatText(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		d, derr := parseDecimal(s)
		if derr != nil {
			return "", err
		}
		return d.String(), nil
	}
	return out, err
}

// ArrayText is the form of an array read as PostgreSQL's array text: as is,
// unless t.DoubleNumbers asks for its numeric and float elements as float8.
func ArrayText(s string, t Type) (string, error) {
	if !t.DoubleNumbers || !numberElems(t.Elem) {
		return s, nil
	}
	decoration, root, err := parseArrayText(s)
	if err != nil {
		return "", err
	}
	if err := root.mapLeaves(asDouble); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(decoration)
	root.write(&b)
	return b.String(), nil
}

// ArrayFromJSON is the form of an array held as a JSON array (a MySQL
// target's mapping): nested arrays for more dimensions; null for NULL;
// numbers for int, numeric and float elements, true and false for bool,
// objects or strings for json and jsonb, strings holding the element's
// PostgreSQL text for every other kind. t is the source column's Type.
func ArrayFromJSON(doc string, t Type) (string, error) {
	p := jsonParser{s: doc}
	p.space()
	root, err := p.arrayTree(t, 0)
	if err != nil {
		return "", fmt.Errorf("array from JSON: %w at offset %d", err, p.i)
	}
	p.space()
	if p.i != len(p.s) || root.leaf {
		return "", fmt.Errorf("array from JSON %.40q: expected one JSON array", doc)
	}
	var b strings.Builder
	root.write(&b)
	return b.String(), nil
}

// arrayTree reads a JSON value as an array dimension (a JSON array) or an
// element of kind t.Elem.
func (p *jsonParser) arrayTree(t Type, depth int) (*arrayNode, error) {
	if p.i >= len(p.s) {
		return nil, errJSONSyntax
	}
	if p.s[p.i] != '[' {
		v, err := p.arrayElem(t)
		if err != nil {
			return nil, err
		}
		return &arrayNode{leaf: true, val: v}, nil
	}
	if depth > 6 {
		return nil, errors.New("more than 6 dimensions")
	}
	p.i++
	n := &arrayNode{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return n, nil
	}
	for {
		p.space()
		kid, err := p.arrayTree(t, depth+1)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, kid)
		p.space()
		if p.i >= len(p.s) {
			return nil, errJSONSyntax
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return n, nil
		default:
			return nil, errJSONSyntax
		}
	}
}

// arrayElem reads one JSON scalar (or, for json elements, object) as an
// element's text.
func (p *jsonParser) arrayElem(t Type) (Value, error) {
	c := p.s[p.i]
	switch {
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return Null, nil
	case c == '"':
		s, err := p.str()
		if err != nil {
			return Null, err
		}
		if t.Elem == KindJSON || t.Elem == KindJSONB {
			// A document held as a string: its jsonb text.
			if s, err = JSON(s, t.DoubleNumbers); err != nil {
				return Null, err
			}
		}
		return V(s), nil
	case c == '{':
		if t.Elem != KindJSON && t.Elem != KindJSONB {
			return Null, fmt.Errorf("a JSON object as an element of %s", t)
		}
		n, err := p.object(0)
		if err != nil {
			return Null, err
		}
		var b strings.Builder
		n.write(&b)
		return V(b.String()), nil
	case strings.HasPrefix(p.s[p.i:], "true"), strings.HasPrefix(p.s[p.i:], "false"):
		b := c == 't'
		if b {
			p.i += 4
		} else {
			p.i += 5
		}
		if t.Elem == KindJSON || t.Elem == KindJSONB {
			return V(strconv.FormatBool(b)), nil
		}
		return V(Bool(b)), nil
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.s) && strings.IndexByte("0123456789+-.eE", p.s[p.i]) >= 0 {
			p.i++
		}
		tok := p.s[start:p.i]
		if !validJSONNumber(tok) {
			return Null, fmt.Errorf("invalid number %q", tok)
		}
		switch {
		case t.DoubleNumbers && numberElems(t.Elem):
			s, err := FloatText(tok, 64)
			return V(s), err
		case t.Elem == KindFloat4:
			s, err := FloatText(tok, 32)
			return V(s), err
		case t.Elem == KindFloat8:
			s, err := FloatText(tok, 64)
			return V(s), err
		case t.Elem == KindJSON || t.Elem == KindJSONB:
			s, err := numberText(tok, t.DoubleNumbers)
			return V(s), err
		}
		d, err := parseDecimal(tok)
		if err != nil {
			return Null, err
		}
		return V(d.String()), nil
	}
	return Null, errJSONSyntax
}
