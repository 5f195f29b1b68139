package tokens

import (
	"testing"
	"time"
)

// TestPrefetch: Prefetch loads the tables in the background, once, and
// counts then use them.
func TestPrefetch(t *testing.T) {
	Prefetch()
	Prefetch() // a second call starts nothing more
	deadline := time.Now().Add(10 * time.Second)
	for !Loaded() {
		if time.Now().After(deadline) {
			t.Fatal("the tables did not load within 10 s of Prefetch")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if Count([]byte("hello world")) != 2 {
		t.Errorf("after Prefetch the count is %d", Count([]byte("hello world")))
	}
}
