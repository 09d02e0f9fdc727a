package main

import (
	"io"
	"os"
)

// palette colours the words of a verdict for a terminal, and nothing for a
// pipe, a file or NO_COLOR. Every colour is a code of the same length, so a
// column of coloured cells stays aligned by tabwriter.
type palette struct{ on bool }

func paletteFor(w io.Writer) palette {
	_, noColour := os.LookupEnv("NO_COLOR")
	return palette{on: !noColour && isTerminal(w)}
}

func (p palette) paint(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// good is green, bad red, head bold.
func (p palette) good(s string) string { return p.paint("32", s) }
func (p palette) bad(s string) string  { return p.paint("31", s) }
func (p palette) head(s string) string { return p.paint("01", s) }
