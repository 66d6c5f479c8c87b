// Package strictyaml decodes Meridian's YAML files (topologies, cluster files) strictly: exactly
// one document, unknown fields are errors, and every error is one line, so that the caller can
// prefix it with the file name and an operator can read it.
package strictyaml

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Decode decodes the single YAML document in data into v. An empty input leaves v unchanged.
func Decode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && err != io.EOF { // io.EOF: empty file
		return oneLine(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return errors.New("yaml: more than one document")
	case err != io.EOF:
		return oneLine(err)
	}
	return nil
}

// oneLine joins the lines of a yaml.v3 type error and escapes the line breaks of quoted values.
func oneLine(err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = "yaml: " + strings.Join(te.Errors, "; ")
	}
	return errors.New(strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg))
}
