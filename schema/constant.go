package schema

import (
	"regexp"
	"strings"
)

// ConstantOf returns the value of a default expression when pg_get_expr
// printed a constant (ruleutils' get_const_expr): 'text'::type with quotes
// doubled, a bare number, true or false, NULL::type. The source's facts
// session prints literals with standard_conforming_strings on, so a
// backslash is itself. A cast label is taken as the column's type typeName
// whatever it names: a default is coerced to its column's type, and an
// implicit coercion prints only its argument (a bigint column's DEFAULT -5
// reads '-5'::integer). Anything else (a function call, an operator, a cast
// in parentheses) is an expression: nil.
func ConstantOf(expr SourceExpr, typeName string) *Value {
	s := strings.TrimSpace(string(expr))
	if s == "" {
		return nil
	}
	switch {
	case s == "true" || s == "false":
		return &Value{Text: s, TypeName: typeName}
	case s == "NULL":
		return &Value{Null: true, TypeName: typeName}
	}
	if rest, ok := strings.CutPrefix(s, "NULL::"); ok {
		if !typeLabel(rest) {
			return nil
		}
		return &Value{Null: true, TypeName: typeName}
	}
	if m := bareNumber.FindStringSubmatch(s); m != nil {
		if m[2] != "" && !typeLabel(m[2][2:]) {
			return nil
		}
		return &Value{Text: m[1], TypeName: typeName}
	}
	if len(s) < 2 || s[0] != '\'' {
		return nil
	}
	// A quoted literal: up to the quote not followed by another.
	var text strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], '\'')
		if j < 0 {
			return nil
		}
		text.WriteString(s[i : i+j])
		i += j + 1
		if i < len(s) && s[i] == '\'' {
			text.WriteByte('\'')
			i++
			continue
		}
		break
	}
	rest, ok := strings.CutPrefix(s[i:], "::")
	if !ok || !typeLabel(rest) {
		return nil
	}
	return &Value{Text: text.String(), TypeName: typeName}
}

// bareNumber is an integer or a float-looking numeric as get_const_expr
// prints them, with an optional cast label (group 2).
var bareNumber = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)((?:::.*)?)$`)

// typeLabel reports whether s reads as a type name as format_type prints
// one: words and quoted identifiers joined by spaces or dots, a typmod in
// parentheses, array brackets; no operator, literal or second cast.
func typeLabel(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					return false
				}
				j += k + 1
				if j < len(s) && s[j] == '"' {
					j++
					continue
				}
				break
			}
			i = j
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '$', c == '.', c == ' ':
			i++
		case c == '(':
			j := strings.IndexByte(s[i:], ')')
			if j < 0 {
				return false
			}
			for _, d := range s[i+1 : i+j] {
				if !(d >= '0' && d <= '9' || d == ',') {
					return false
				}
			}
			i += j + 1
		case c == '[':
			if !strings.HasPrefix(s[i:], "[]") {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}
