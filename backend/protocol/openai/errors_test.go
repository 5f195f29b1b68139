package openai

import (
	"net/http"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func TestDecodeError(t *testing.T) {
	tests := []struct {
		body string
		want protocol.ErrorInfo
		ok   bool
	}{
		{`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			protocol.ErrorInfo{Message: "Incorrect API key provided", Type: "invalid_request_error", Code: "invalid_api_key"}, true},
		{`{"error":{"message":"bad","type":"invalid_request_error","param":"messages","code":400}}`,
			protocol.ErrorInfo{Message: "bad", Type: "invalid_request_error", Code: "400", Param: "messages"}, true},
		{`{"error":"model not loaded"}`, protocol.ErrorInfo{Message: "model not loaded"}, true},
		{`{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`,
			protocol.ErrorInfo{Message: "The model does not exist.", Type: "NotFoundError", Code: "404"}, true},
		{` [{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]`,
			protocol.ErrorInfo{Message: "Resource has been exhausted", Code: "429"}, true},
		{`{"error":{"code":{"nested":1},"message":"m"}}`, protocol.ErrorInfo{Message: "m"}, true},
		{`{"choices":[]}`, protocol.ErrorInfo{}, false},
		{`{"error":null}`, protocol.ErrorInfo{}, false},
		{`{"error":""}`, protocol.ErrorInfo{}, false},
		{`[]`, protocol.ErrorInfo{}, false},
		{`<html>502 Bad Gateway</html>`, protocol.ErrorInfo{}, false},
		{``, protocol.ErrorInfo{}, false},
	}
	for _, tc := range tests {
		got, ok := Codec.DecodeError([]byte(tc.body))
		if ok != tc.ok || got != tc.want {
			t.Errorf("DecodeError(%s) = %+v %v, want %+v %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

func TestEncodeError(t *testing.T) {
	tests := []struct {
		in   protocol.ErrorInfo
		want string
	}{
		{protocol.ErrorInfo{Status: 429, Message: "slow down"}, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`},
		{protocol.ErrorInfo{Status: 401, Message: "m"}, `{"error":{"message":"m","type":"authentication_error","param":null,"code":null}}`},
		{protocol.ErrorInfo{Status: 403, Message: "m"}, `{"error":{"message":"m","type":"authentication_error","param":null,"code":null}}`},
		{protocol.ErrorInfo{Status: 400, Message: "m", Param: "model", Code: "model_too_long"},
			`{"error":{"message":"m","type":"invalid_request_error","param":"model","code":"model_too_long"}}`},
		{protocol.ErrorInfo{Status: 404, Message: "m"}, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{protocol.ErrorInfo{Status: 503, Message: "m"}, `{"error":{"message":"m","type":"service_unavailable","param":null,"code":null}}`},
		{protocol.ErrorInfo{Status: 502, Message: "<m>"}, `{"error":{"message":"<m>","type":"upstream_error","param":null,"code":null}}`},
		{protocol.ErrorInfo{Status: 429, Type: "tokens", Message: "m"}, `{"error":{"message":"m","type":"tokens","param":null,"code":null}}`},
	}
	for _, tc := range tests {
		if got := string(Codec.EncodeError(tc.in)); got != tc.want {
			t.Errorf("EncodeError(%+v)\n got %s\nwant %s", tc.in, got, tc.want)
		}
		// What FreeLane writes it reads back.
		back, ok := Codec.DecodeError(Codec.EncodeError(tc.in))
		want := tc.in
		want.Status = 0
		if want.Type == "" {
			want.Type = errorType(tc.in.Status)
		}
		if !ok || back != want {
			t.Errorf("DecodeError(EncodeError(%+v)) = %+v", tc.in, back)
		}
	}
}

func TestEncodeStreamError(t *testing.T) {
	ev := Codec.EncodeStreamError(protocol.ErrorInfo{Status: http.StatusServiceUnavailable, Message: "all backends failed", Code: "no_backend", Param: "x"})
	want := `{"error":{"message":"all backends failed","type":"service_unavailable","code":"no_backend"}}`
	if string(ev.Data) != want || ev.Kind != llm.Held || Codec.EventName(ev.Data) != "" {
		t.Errorf("got %v %s, want %s", ev.Kind, ev.Data, want)
	}
	// A client of this codec's own decoder sees it as an error.
	if _, _, err := Codec.NewStreamDecoder().Decode(nil, nil, ev.Data); err == nil {
		t.Error("the stream error does not decode as one")
	}
}
