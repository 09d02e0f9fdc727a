package manifest

import (
	"bytes"
	"strings"
)

// scanDocument reads the plain YAML most manifests are written in —
// block mappings and sequences by indentation, one-line flow collections,
// plain and simply quoted scalars, comments — straight into the map
// convertDocument makes of yaml.v3's tree for it, without the tree: the
// parse is most of a large file's load. Anything else (non-ASCII text, tabs, anchors,
// aliases, tags, block scalars, multi-line scalars or flow collections,
// escapes, complex keys, duplicate keys, directives) is declined (ok
// false), and the caller parses the document with yaml.v3. line is the
// 1-based line, in text, of the document's first key.
// TestScanDocumentIsYAML holds the two to the same answers.
func scanDocument(text []byte) (obj map[string]any, line int, ok bool) {
	for _, c := range text {
		if c >= 0x80 || c < 0x20 && c != '\n' || c == 0x7f {
			return nil, 0, false // beyond ASCII text: YAML's own rules for it
		}
	}
	s := &scanner{}
	for i, l := range bytes.Split(text, []byte("\n")) {
		raw := string(bytes.TrimRight(l, "\r"))
		if strings.ContainsRune(raw, '\t') {
			return nil, 0, false
		}
		trimmed := strings.TrimLeft(raw, " ")
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if strings.HasPrefix(raw, "---") || strings.HasPrefix(raw, "...") || raw[0] == '%' {
			return nil, 0, false // the splitter's business, or a directive
		}
		s.lines = append(s.lines, scanLine{indent: len(raw) - len(trimmed), text: trimmed, no: i + 1})
	}
	if len(s.lines) == 0 || s.lines[0].indent != 0 {
		return nil, 0, false
	}
	v, ok := s.block(0)
	if !ok || s.pos != len(s.lines) {
		return nil, 0, false
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, 0, false
	}
	return m, s.lines[0].no, true
}

type scanLine struct {
	indent int
	text   string
	no     int
}

type scanner struct {
	lines []scanLine
	pos   int
}

// block reads the mapping or sequence whose lines start at indent.
func (s *scanner) block(indent int) (any, bool) {
	l := s.lines[s.pos]
	if l.indent != indent {
		return nil, false
	}
	if l.text == "-" || strings.HasPrefix(l.text, "- ") {
		return s.sequence(indent)
	}
	return s.mapping(indent)
}

// mapping reads key: value lines at indent.
func (s *scanner) mapping(indent int) (any, bool) {
	m := map[string]any{}
	for s.pos < len(s.lines) && s.lines[s.pos].indent == indent {
		l := s.lines[s.pos]
		if l.text == "-" || strings.HasPrefix(l.text, "- ") {
			return nil, false
		}
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		s.pos++
		v, ok := s.value(indent, rest, true)
		if !ok {
			return nil, false
		}
		m[key] = v
	}
	if s.pos < len(s.lines) && s.lines[s.pos].indent > indent {
		return nil, false
	}
	return m, true
}

// sequence reads "- item" lines at indent.
func (s *scanner) sequence(indent int) (any, bool) {
	seq := []any{}
	for s.pos < len(s.lines) && s.lines[s.pos].indent == indent {
		l := s.lines[s.pos]
		if l.text != "-" && !strings.HasPrefix(l.text, "- ") {
			return seq, true // the mapping that holds the sequence goes on
		}
		v, ok := s.sequenceItem(indent, l)
		if !ok {
			return nil, false
		}
		seq = append(seq, v)
	}
	if s.pos < len(s.lines) && s.lines[s.pos].indent > indent {
		return nil, false
	}
	return seq, true
}

// sequenceItem reads the item of the "- item" line l, at indent: on the
// dash's line, below it, or a mapping begun on it.
func (s *scanner) sequenceItem(indent int, l scanLine) (any, bool) {
	item := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
	if item == "" || item[0] == '#' {
		s.pos++
		if s.pos >= len(s.lines) || s.lines[s.pos].indent <= indent {
			return nil, true
		}
		return s.block(s.lines[s.pos].indent)
	}
	if item[0] == '-' && (len(item) == 1 || item[1] == ' ') {
		return nil, false // a sequence in a sequence's line
	}
	if _, _, isKey := splitKey(item); isKey && item[0] != '{' && item[0] != '[' && item[0] != '"' && item[0] != '\'' {
		// A mapping begun on the dash's line: its keys are at the
		// item's column.
		s.lines[s.pos] = scanLine{indent: indent + len(l.text) - len(item), text: item, no: l.no}
		return s.mapping(s.lines[s.pos].indent)
	}
	s.pos++
	v, ok := scalarOrFlow(item)
	if !ok || s.pos < len(s.lines) && s.lines[s.pos].indent > indent {
		return nil, false // a multi-line scalar
	}
	return v, true
}

// value reads what follows "key:" on its line, or below it.
func (s *scanner) value(indent int, rest string, inMapping bool) (any, bool) {
	if rest == "" || rest[0] == '#' {
		if s.pos >= len(s.lines) {
			return nil, true
		}
		next := s.lines[s.pos]
		switch {
		case next.indent > indent:
			return s.block(next.indent)
		case next.indent == indent && inMapping && (next.text == "-" || strings.HasPrefix(next.text, "- ")):
			return s.sequence(indent) // a sequence as a mapping's value needs no indent
		}
		return nil, true
	}
	v, ok := scalarOrFlow(rest)
	if !ok || s.pos < len(s.lines) && s.lines[s.pos].indent > indent {
		return nil, false // a multi-line scalar, or a block after a value
	}
	return v, true
}

// maxSimpleKey: YAML allows an implicit key of at most 1024 characters.
const maxSimpleKey = 1000

// splitKey cuts "key: rest" (or "key:"); the key must be a plain string
// or a simply quoted one.
func splitKey(text string) (key, rest string, ok bool) {
	var raw string
	switch text[0] {
	case '"', '\'':
		end := closingQuote(text)
		if end < 0 || end+1 >= len(text) || text[end+1] != ':' {
			return "", "", false
		}
		raw, rest = text[:end+1], text[end+2:]
		k, ok := quoted(raw)
		if !ok {
			return "", "", false
		}
		key = k
	default:
		i := strings.Index(text, ": ")
		if i < 0 {
			if !strings.HasSuffix(text, ":") {
				return "", "", false
			}
			i = len(text) - 1
		}
		raw, rest = text[:i], text[i+1:]
		if !safePlain(raw, false) || raw == "<<" {
			return "", "", false
		}
		v, isString := resolvePlainV2(raw)
		if !isString {
			return "", "", false
		}
		key = v.(string)
	}
	if rest != "" && rest[0] != ' ' || len(raw) > maxSimpleKey {
		return "", "", false
	}
	return key, strings.TrimLeft(rest, " "), true
}

// scalarOrFlow reads a value on one line: a one-line flow collection, a
// quoted scalar, or a plain one (a comment after it dropped).
func scalarOrFlow(text string) (any, bool) {
	switch text[0] {
	case '{', '[':
		f := &flow{text: text}
		v, ok := f.value()
		if !ok {
			return nil, false
		}
		f.space()
		if f.i < len(f.text) && !(f.text[f.i] == '#' && f.text[f.i-1] == ' ') {
			return nil, false
		}
		return v, true
	case '"', '\'':
		end := closingQuote(text)
		if end < 0 {
			return nil, false
		}
		after := strings.TrimLeft(text[end+1:], " ")
		if after != "" && !(after[0] == '#' && end+1 < len(text) && text[end+1] == ' ') {
			return nil, false
		}
		return quoted(text[:end+1])
	}
	if i := strings.Index(text, " #"); i >= 0 {
		text = text[:i]
	}
	text = strings.TrimRight(text, " ")
	if !safePlain(text, false) {
		return nil, false
	}
	return plainToJSON(text)
}

// safePlain: a plain scalar the scanner reads as yaml.v3 does — no
// indicator that begins something else, no ": " or " #" inside, and in
// flow no flow indicator.
func safePlain(s string, inFlow bool) bool {
	if s == "" || strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") && !(s[0] == '-' && len(s) > 1 && s[1] != ' ') {
		return false
	}
	if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || strings.Contains(s, " #") || strings.HasSuffix(s, " ") {
		return false
	}
	return !inFlow || !strings.ContainsAny(s, ",[]{}")
}

// closingQuote is the index of the quote that closes text's first
// character, -1 when there is none on the line or the scalar escapes.
func closingQuote(text string) int {
	q := text[0]
	for i := 1; i < len(text); i++ {
		switch {
		case q == '"' && text[i] == '\\':
			return -1 // escapes: yaml.v3 reads them
		case text[i] == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			i++ // '' is a quote inside
		case text[i] == q:
			return i
		}
	}
	return -1
}

// quoted is a quoted scalar's string.
func quoted(raw string) (string, bool) {
	body := raw[1 : len(raw)-1]
	if raw[0] == '\'' {
		body = strings.ReplaceAll(body, "''", "'")
	}
	return body, true
}

// flow reads a one-line flow collection.
type flow struct {
	text string
	i    int
}

func (f *flow) space() {
	for f.i < len(f.text) && f.text[f.i] == ' ' {
		f.i++
	}
}

func (f *flow) value() (any, bool) {
	f.space()
	if f.i >= len(f.text) {
		return nil, false
	}
	switch f.text[f.i] {
	case '{':
		return f.mapping()
	case '[':
		return f.sequence()
	case '"', '\'':
		end := closingQuote(f.text[f.i:])
		if end < 0 {
			return nil, false
		}
		s, ok := quoted(f.text[f.i : f.i+end+1])
		f.i += end + 1
		return s, ok
	}
	start := f.i
	for f.i < len(f.text) && !strings.ContainsRune(",]}", rune(f.text[f.i])) {
		if f.text[f.i] == ':' && (f.i+1 == len(f.text) || f.text[f.i+1] == ' ') {
			break
		}
		f.i++
	}
	plain := strings.TrimRight(f.text[start:f.i], " ")
	if plain == "" {
		return nil, false
	}
	if !safePlain(plain, true) {
		return nil, false
	}
	return plainToJSON(plain)
}

func (f *flow) mapping() (any, bool) {
	f.i++ // {
	m := map[string]any{}
	for {
		f.space()
		if f.i < len(f.text) && f.text[f.i] == '}' && len(m) == 0 {
			f.i++
			return m, true
		}
		keyStart := f.i
		k, ok := f.value()
		key, isString := k.(string)
		if !ok || !isString || key == "<<" || f.i-keyStart > maxSimpleKey {
			return nil, false
		}
		if raw := f.text[:f.i]; !strings.HasSuffix(raw, "'") && !strings.HasSuffix(raw, "\"") {
			if _, plainString := resolvePlainV2(key); !plainString {
				return nil, false
			}
		}
		f.space()
		if f.i+1 >= len(f.text) || f.text[f.i] != ':' || f.text[f.i+1] != ' ' {
			return nil, false
		}
		f.i++
		v, ok := f.value()
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		m[key] = v
		if done, ok := f.after('}'); !ok || done {
			return m, ok
		}
	}
}

// after reads what follows an entry: a comma (another entry comes) or
// the collection's close (done); ok false for anything else.
func (f *flow) after(close byte) (done, ok bool) {
	f.space()
	if f.i >= len(f.text) {
		return false, false
	}
	switch f.text[f.i] {
	case ',':
		f.i++
		return false, true
	case close:
		f.i++
		return true, true
	}
	return false, false
}

func (f *flow) sequence() (any, bool) {
	f.i++ // [
	seq := []any{}
	for {
		f.space()
		if f.i < len(f.text) && f.text[f.i] == ']' && len(seq) == 0 {
			f.i++
			return seq, true
		}
		v, ok := f.value()
		if !ok {
			return nil, false
		}
		if _, isMap := v.(map[string]any); !isMap && f.i < len(f.text) && f.text[f.i] == ':' {
			return nil, false // a single-pair mapping in a sequence
		}
		seq = append(seq, v)
		if done, ok := f.after(']'); !ok || done {
			return seq, ok
		}
	}
}
