package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// SyntaxError is a configuration file that is not valid JSON. Line and Column
// are 1-based and point at the byte where parsing stopped.
type SyntaxError struct {
	File   string
	Line   int
	Column int
	Err    error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("config: %s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// newSyntaxError locates err (from encoding/json) in data.
func newSyntaxError(file string, data []byte, err error) error {
	offset := int64(-1)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	}
	if offset < 0 || offset > int64(len(data)) {
		offset = int64(len(data))
	}
	// encoding/json counts the offending byte in Offset.
	at := max(offset-1, 0)
	before := data[:at]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(at) - bytes.LastIndexByte(before, '\n')
	return &SyntaxError{File: file, Line: line, Column: col, Err: err}
}

// stripJSONC blanks out the comments and trailing commas that .NET accepts
// in appsettings.json, so that encoding/json can read the file. Every removed
// byte becomes a space (newlines are kept), so offsets and line numbers in
// later errors still match the original file. data is not modified.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	blankComments(out)
	blankTrailingCommas(out)
	return out
}

func blankComments(b []byte) {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				if b[i] != '\r' {
					b[i] = ' '
				}
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			for i += 2; i < len(b); i++ {
				if b[i] == '*' && i+1 < len(b) && b[i+1] == '/' {
					b[i], b[i+1] = ' ', ' '
					i++
					break
				}
				if b[i] != '\n' && b[i] != '\r' {
					b[i] = ' '
				}
			}
		}
	}
}

func blankTrailingCommas(b []byte) {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != ',' {
			continue
		}
		j := i + 1
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		if j < len(b) && (b[j] == '}' || b[j] == ']') {
			b[i] = ' '
		}
	}
}
