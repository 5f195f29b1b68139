package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
)

// Tasks are the task names a client may send in X-FreeLane-Task; the
// task package's Classifier provides them.
type Tasks interface {
	Known(name string) bool
	Names() []string
}

// The headers a client steers routing with, in every dialect.
const (
	TaskHeader = "X-FreeLane-Task"
	GearHeader = "X-FreeLane-Gear"
)

// builtinTasks are the task classes known without a configuration.
var builtinTasks = []string{"default", "background", "think", "long_context"}

// maxHeaderEcho bounds how much of a refused header value an error
// message repeats.
const maxHeaderEcho = 64

// routingHeaders sets the request's session and user pseudonyms
// (identify), and its task and gear from the client's
// X-FreeLane-Task and X-FreeLane-Gear headers, or refuses a value that
// names no task or gear with a 400 in d's dialect, and what the client
// asks of the response cache (cacheHeaders); ok is false when the
// answer is written. Every routed call of every dialect passes here
// right before the router sees it.
func (s *Server) routingHeaders(w http.ResponseWriter, r *http.Request, d protocol.Dialect, req *llm.Request) bool {
	if !s.identify(w, r, d, req) {
		return false
	}
	if v := strings.TrimSpace(r.Header.Get(TaskHeader)); v != "" {
		if !s.knownTask(v) {
			writeIn(w, d, "invalid_request_error", protocol.ErrorInfo{Status: http.StatusBadRequest, Code: "unknown_task",
				Message: fmt.Sprintf("%s names no task: %q is not one of %s", TaskHeader, llm.Truncate(v, maxHeaderEcho), joinList(s.taskNames(), "or"))})
			return false
		}
		req.Task = v
	}
	if v := strings.TrimSpace(r.Header.Get(GearHeader)); v != "" {
		g := strings.ToLower(v)
		if g != router.GearAuto && g != router.GearManual {
			writeIn(w, d, "invalid_request_error", protocol.ErrorInfo{Status: http.StatusBadRequest, Code: "invalid_gear",
				Message: fmt.Sprintf("%s must be %q or %q, got %q", GearHeader, router.GearAuto, router.GearManual, llm.Truncate(v, maxHeaderEcho))})
			return false
		}
		req.Gear = g
	}
	return s.cacheHeaders(w, r, d, req)
}

func (s *Server) knownTask(name string) bool {
	if s.o.Tasks != nil {
		return s.o.Tasks.Known(name)
	}
	return slices.Contains(builtinTasks, name)
}

func (s *Server) taskNames() []string {
	if s.o.Tasks != nil {
		return s.o.Tasks.Names()
	}
	return builtinTasks
}
