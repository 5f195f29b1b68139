package control_test

import (
	"context"
	"testing"

	"freelane/backend/config"
	"freelane/backend/control"
)

// A task's chain follows the chain when the dashboard renames it, and is
// let go when the chain is deleted, so the configuration stays valid and
// the task's requests keep the chain they ask for.
func TestTaskChainFollowsRenameAndDelete(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	ctx := context.Background()
	if _, err := c.AddProvider(ctx, groqInput()); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateChain(ctx, "quick", []string{"groq/llama-3.3-70b-versatile"}, control.ChainRouting{}); err != nil {
		t.Fatal(err)
	}
	seed := *r.last()
	seed.Tasks = []config.Task{{Name: "background", When: &config.TaskWhen{Model: "claude-*haiku*"}, Chain: "quick"}, {Name: "review", Chain: "auto"}}
	r2 := newRig(t)
	c = r2.open(&seed)
	if err := c.UpdateChain(ctx, "quick", control.ChainInput{Name: ptr("fast")}, nil); err != nil {
		t.Fatal(err)
	}
	if ts := r2.last().Tasks; len(ts) != 2 || ts[0].Chain != "fast" || ts[1].Chain != "auto" {
		t.Fatalf("after the rename: %+v", ts)
	}
	if err := c.DeleteChain(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	if ts := r2.last().Tasks; len(ts) != 2 || ts[0].Chain != "" || ts[0].When == nil || ts[1].Chain != "auto" {
		t.Fatalf("after the delete: %+v", ts)
	}
}
