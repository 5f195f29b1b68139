package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// SyntaxError says where a body that json.Valid refused breaks, in words
// a client can act on: the decoder's message with the byte offset, or
// that the input ended early or went on after the value. It runs only on
// a body already refused, so its cost is off the hot path.
func SyntaxError(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	err := dec.Decode(&v)
	if err == nil {
		if _, err = dec.Token(); errors.Is(err, io.EOF) {
			return "unexpected end of input"
		}
		return "data after the JSON value"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}
