package manifest

import (
	"bytes"
	"regexp"

	yamlv3 "go.yaml.in/yaml/v3"
)

// docSeparator is a line that starts a YAML document.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// Chunks cuts a YAML file into its documents as text, each with the
// separator line that starts it, so that joined they are the file again:
// what tools that edit a file in place (lint --fix, tune --write) rewrite
// one document of.
func Chunks(data []byte) [][]byte {
	var out [][]byte
	start := 0
	for _, loc := range docSeparator.FindAllIndex(data, -1) {
		if loc[0] > start {
			out = append(out, data[start:loc[0]])
			start = loc[0]
		}
	}
	return append(out, data[start:])
}

// EncodeChunk writes root as the document chunk (one of Chunks) was: its
// separator line kept, two-space indentation, comments as root carries
// them.
func EncodeChunk(chunk []byte, root *yamlv3.Node) ([]byte, error) {
	var buf bytes.Buffer
	if sep := docSeparator.Find(chunk); sep != nil && bytes.HasPrefix(chunk, sep) {
		buf.Write(sep)
		buf.WriteByte('\n')
	}
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
