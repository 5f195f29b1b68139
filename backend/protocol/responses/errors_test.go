package responses

import (
	"testing"

	"freelane/backend/protocol"
)

// The envelope the codec writes is the one it reads back.
func TestErrorEnvelopeRoundTrip(t *testing.T) {
	in := protocol.ErrorInfo{Status: 404, Code: "previous_response_not_found", Message: "Previous response with id 'resp_x' not found.", Param: "previous_response_id"}
	got, ok := Codec.DecodeError(Codec.EncodeError(in))
	want := in
	want.Status, want.Type = 0, "invalid_request_error"
	if !ok || got != want {
		t.Errorf("got %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := Codec.DecodeError([]byte(`{"id":"resp_1"}`)); ok {
		t.Error("a response was read as an error")
	}
}
