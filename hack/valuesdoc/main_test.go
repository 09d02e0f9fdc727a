package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDocIsCurrent: docs/helm.md's values table is what the schema and
// values.yaml say now.
func TestDocIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		t.Fatal(err)
	}
	table, err := Table(filepath.Join(root, schemaFile), filepath.Join(root, valuesFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(doc, table)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Errorf("%s's values table is stale: run go run ./hack/valuesdoc", docFile)
	}
}
