package api

import (
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/store"
)

// defaultUsageDays is the range /api/usage covers without from and to.
const defaultUsageDays = 30

// usageRange reads from and to (RFC 3339 times, or YYYY-MM-DD local dates:
// from the start of from's day to the end of to's day). It writes the
// error itself and returns ok false on a bad value.
func (h *adminHandlers) usageRange(w http.ResponseWriter, r *http.Request) (from, to time.Time, ok bool) {
	q := r.URL.Query()
	parse := func(name string, end bool) (time.Time, bool) {
		v := strings.TrimSpace(q.Get(name))
		if v == "" {
			return time.Time{}, true
		}
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t, true
		}
		if d, err := time.ParseInLocation(time.DateOnly, v, time.Local); err == nil {
			if end {
				d = d.AddDate(0, 0, 1)
			}
			return d, true
		}
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			fmt.Sprintf("%s must be an RFC 3339 time such as 2026-11-30T08:00:00Z or a date such as 2026-11-30, got %q", name, v), name)
		return time.Time{}, false
	}
	if from, ok = parse("from", false); !ok {
		return
	}
	if to, ok = parse("to", true); !ok {
		return
	}
	if to.IsZero() {
		to = h.a.Now()
	}
	if from.IsZero() {
		from = to.AddDate(0, 0, -defaultUsageDays)
	}
	if !from.Before(to) {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "from must be before to", "from")
		return from, to, false
	}
	return from, to, true
}

type usageAnswer struct {
	From    time.Time        `json:"from"`
	To      time.Time        `json:"to"`
	GroupBy string           `json:"group_by"`
	Rows    []store.UsageRow `json:"rows"`
}

func (h *adminHandlers) usage(w http.ResponseWriter, r *http.Request) {
	from, to, ok := h.usageRange(w, r)
	if !ok {
		return
	}
	group := r.URL.Query().Get("group_by")
	switch group {
	case "":
		group = store.ByDay
	case store.ByDay, store.ByBackend, store.ByChain, store.ByDayBackend, store.ByPath, store.ByInstance:
	default:
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			fmt.Sprintf("group_by must be day, backend, chain, day,backend, path or instance, got %q", llm.Truncate(group, 40)), "group_by")
		return
	}
	rows, err := h.a.Usage(r.Context(), store.UsageQuery{From: from, To: to, GroupBy: group})
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "server_error", "internal", "the usage could not be read: "+err.Error(), "")
		return
	}
	writeJSON(w, http.StatusOK, usageAnswer{From: from, To: to, GroupBy: group, Rows: rows})
}

// usageCSV streams the ledger as CSV, row by row from the database, so an
// export of any size is never built in memory.
func (h *adminHandlers) usageCSV(w http.ResponseWriter, r *http.Request) {
	from, to, ok := h.usageRange(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="freelane-usage-%s-%s.csv"`,
		from.Local().Format(time.DateOnly), to.Local().Format(time.DateOnly)))
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"time", "request_id", "chain", "backend", "outcome", "status", "latency_ms", "ttft_ms",
		"prompt_tokens", "completion_tokens", "estimated", "cost", "path"})
	rec := make([]string, 13)
	err := h.a.EachLedgerRow(r.Context(), from, to, func(row store.LedgerRow) error {
		rec[0] = row.Time.UTC().Format(time.RFC3339Nano)
		rec[1], rec[2], rec[3], rec[4] = row.RequestID, row.Chain, row.Backend, row.Outcome
		rec[5] = strconv.Itoa(row.Status)
		rec[6] = strconv.FormatFloat(row.LatencyMS, 'f', 3, 64)
		rec[7] = ""
		if row.TTFTMS.Valid {
			rec[7] = strconv.FormatFloat(row.TTFTMS.Float64, 'f', 3, 64)
		}
		rec[8] = strconv.FormatInt(row.PromptTokens, 10)
		rec[9] = strconv.FormatInt(row.CompletionTokens, 10)
		rec[10] = strconv.FormatBool(row.Estimated)
		rec[11] = strconv.FormatFloat(row.Cost, 'f', -1, 64)
		rec[12] = row.Path
		if err := cw.Write(rec); err != nil {
			return err
		}
		return r.Context().Err()
	})
	cw.Flush()
	if err != nil && !errors.Is(err, r.Context().Err()) {
		// Headers are gone; all that can be done is to cut the body short.
		panic(http.ErrAbortHandler)
	}
}

func (h *adminHandlers) setBudgets(w http.ResponseWriter, r *http.Request) {
	var in []control.BudgetJSON
	if !h.decode(w, r, &in) {
		return
	}
	if err := h.a.Control().SetBudgets(r.Context(), in); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.a.Budgets())
}

func (h *adminHandlers) setProviderLimits(w http.ResponseWriter, r *http.Request) {
	var in control.ModelLimitsInput
	if !h.decode(w, r, &in) {
		return
	}
	provider := r.PathValue("provider")
	if err := in.Check(provider, ""); err != nil {
		fail(w, err)
		return
	}
	if err := h.a.Control().SetProviderLimits(r.Context(), provider, in.Limits); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.a.Control().Limits())
}

func (h *adminHandlers) setModelLimits(w http.ResponseWriter, r *http.Request) {
	var in control.ModelLimitsInput
	if !h.decode(w, r, &in) {
		return
	}
	if err := h.a.Control().SetModelLimits(r.Context(), r.PathValue("provider"), r.PathValue("model"), in); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.a.Control().Limits())
}
