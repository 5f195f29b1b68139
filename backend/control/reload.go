package control

import (
	"context"
	"encoding/json"
	"fmt"
)

// Reload reads the stored documents again and applies them as an edit
// made here would be applied, for a store several instances share: one of
// them changed the configuration, the keys or the header values. Nothing
// changes when they cannot be read or do not apply; nothing is stored.
func (c *Control) Reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := map[string]sealedKey{}
	raw, ok, err := c.db.GetState(ctx, docKeys)
	if err != nil {
		return err
	}
	if ok {
		if err := json.Unmarshal(raw, &keys); err != nil {
			return fmt.Errorf("control: stored keys are damaged: %w", err)
		}
	}
	oldKeys := c.keys
	c.keys = keys
	restore := func(err error) error {
		c.keys = oldKeys
		return err
	}
	doc, err := c.loadStored(ctx)
	if err != nil {
		return restore(err)
	}
	if doc == nil {
		// Nothing is stored: there is nothing to take over.
		return restore(nil)
	}
	eff, err := c.effective(doc)
	if err != nil {
		return restore(err)
	}
	if c.apply != nil {
		if err := c.apply(eff); err != nil {
			return restore(err)
		}
	}
	c.doc = doc
	for _, f := range c.changed {
		f()
	}
	return nil
}
