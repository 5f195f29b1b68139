package gateway

import (
	"context"
	"net/http"

	"freelane/backend/api"
	"freelane/backend/control"
)

// AllowLocal lets the server of another account found on in.Port serve,
// or withdraws that permission.
func (a adminView) AllowLocal(ctx context.Context, in api.LocalAllowInput, allow bool) (api.SetupView, error) {
	if in.Port < 1 || in.Port > 65535 {
		return api.SetupView{}, &control.Error{Status: http.StatusBadRequest, Param: "port", Message: "port must be a port number from 1 to 65535"}
	}
	if in.Kind == "" || len(in.Kind) > 32 {
		return api.SetupView{}, &control.Error{Status: http.StatusBadRequest, Param: "kind", Message: "kind is required: the kind of server the Setup screen shows, such as ollama"}
	}
	if in.UID == nil {
		return api.SetupView{}, &control.Error{Status: http.StatusBadRequest, Param: "uid", Message: "uid is required: the user id the Setup screen shows for the server"}
	}
	if err := a.g.pool.Allow(in.Port, in.Kind, *in.UID, allow); err != nil {
		return api.SetupView{}, err
	}
	return a.Setup(), nil
}
