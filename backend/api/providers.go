package api

import (
	"context"
	"net/http"
	"time"

	"freelane/backend/control"
)

// Error codes of the provider checks, besides the usual invalid_value.
const (
	// CodeKeyRefused is a key the provider refused when it was tried.
	CodeKeyRefused = "key_refused"
	// CodeProviderUnreachable is a provider whose key could not be tried
	// because its server could not be reached or gave no usable answer.
	// Sending the same add or edit again with unreachable_ok stores it
	// all the same.
	CodeProviderUnreachable = "provider_unreachable"
)

// ModelListInput asks for the models a provider's server lists, before
// the provider is added or while it is edited.
type ModelListInput struct {
	// Kind is the provider's protocol, a provider kind as the config names
	// it ("openai").
	Kind    string `json:"kind"`
	BaseURL string `json:"base_url"`
	// APIKey is the key to list with; "" lists without one, or with the
	// stored key of Provider.
	APIKey string `json:"api_key"`
	// Provider names a stored provider being edited: when api_key is ""
	// and kind and base_url are the provider's own, its stored key and
	// headers are used. A key is never sent to another address than the
	// one it was given for.
	Provider string `json:"provider"`
}

// ModelList is what a provider's server lists.
type ModelList struct {
	// Listed is false when the server has no model list (it answered
	// 404 or 405): the models are then typed by hand.
	Listed bool          `json:"listed"`
	Models []ListedModel `json:"models"`
	// Message says what the list showed, in words.
	Message string `json:"message"`
}

// ListedModel is one model of a provider's list.
type ListedModel struct {
	ID string `json:"id"`
	// Name is the display name, when the list gives one.
	Name string `json:"name"`
	// Context and MaxOutput are in tokens, 0 when the list does not say.
	Context   int `json:"context"`
	MaxOutput int `json:"max_output"`
	// Chat is false for models that do not answer chat requests, such as
	// embedding or speech models.
	Chat bool `json:"chat"`
	// Priced is set when the list gives prices; Free then says whether
	// the model costs nothing.
	Priced bool `json:"priced"`
	Free   bool `json:"free"`
}

// Providers adds and edits providers by hand, trying each one's key first.
type Providers interface {
	// AddProvider adds a provider after trying its key against the
	// provider's model list: a refused key is a *control.Error with
	// CodeKeyRefused, a server that cannot be reached one with
	// CodeProviderUnreachable unless in.UnreachableOK.
	AddProvider(ctx context.Context, in control.ProviderInput) (control.ProviderView, error)
	// UpdateProvider edits a provider, trying its key as AddProvider does
	// when the edit changes where or how requests go.
	UpdateProvider(ctx context.Context, name string, in control.ProviderInput) (control.ProviderView, error)
	// ProviderModels reads the model list of a provider's server.
	ProviderModels(ctx context.Context, in ModelListInput) (ModelList, error)
}

// checkTime bounds a request that tries a key: one list read, or one
// tiny request where the server has no list.
const checkTime = 30 * time.Second

func (h *adminHandlers) addProvider(w http.ResponseWriter, r *http.Request) {
	var in control.ProviderInput
	if !h.decode(w, r, &in) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkTime)
	defer cancel()
	v, err := h.a.AddProvider(ctx, in)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (h *adminHandlers) updateProvider(w http.ResponseWriter, r *http.Request) {
	var in control.ProviderInput
	if !h.decode(w, r, &in) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkTime)
	defer cancel()
	name := r.PathValue("name")
	// A local server found by discovery is renamed, hidden or given
	// limits; every other provider is edited as stored.
	v, handled, err := h.a.Control().UpdateLocal(ctx, name, in)
	if !handled {
		v, err = h.a.UpdateProvider(ctx, name, in)
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *adminHandlers) providerModels(w http.ResponseWriter, r *http.Request) {
	var in ModelListInput
	if !h.decode(w, r, &in) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkTime)
	defer cancel()
	v, err := h.a.ProviderModels(ctx, in)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
