package jsonscan

import (
	"encoding/json"
	"testing"
)

func TestSetMembers(t *testing.T) {
	drop := func(names ...string) func([]byte) ([]byte, bool) {
		return func(k []byte) ([]byte, bool) {
			for _, n := range names {
				if string(k) == n {
					return nil, true
				}
			}
			if string(k) == "user" {
				return []byte(`"h"`), true
			}
			return nil, false
		}
	}
	cases := []struct {
		in    string
		names []string
		want  string
	}{
		{`{"a":1, "user":"x", "b":2}`, nil, `{"a":1, "user":"h", "b":2}`},
		{`{"a":1, "s":"x", "b":2}`, []string{"s"}, `{"a":1, "b":2}`},
		{`{"a":1 , "s":"x"}`, []string{"s"}, `{"a":1}`},
		{`{"s":"x","a":1}`, []string{"s"}, `{"a":1}`},
		{`{ "s":"x" }`, []string{"s"}, `{  }`},
		{`{"a":1,"s":"x","t":"y"}`, []string{"s", "t"}, `{"a":1}`},
		{`{"s":"x","t":"y","a":1}`, []string{"s", "t"}, `{"a":1}`},
		{`{"s":"x","a":1,"t":"y"}`, []string{"s", "t"}, `{"a":1}`},
		{`{"s":"x","t":"y"}`, []string{"s", "t"}, `{}`},
		{"{\n  \"a\": 1,\n  \"s\": \"x\",\n  \"user\": \"u\"\n}", []string{"s"}, "{\n  \"a\": 1,\n  \"user\": \"h\"\n}"},
	}
	for _, c := range cases {
		b := []byte(c.in)
		got := string(Apply(b, SetMembers(b, 0, drop(c.names...))))
		if got != c.want {
			t.Errorf("%s without %v = %s, want %s", c.in, c.names, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s is not JSON", got)
		}
	}
}

func TestApplyInsertFirst(t *testing.T) {
	b := []byte(`{"s":1,"a":2}`)
	got := Apply(b, []Splice{{1, 1, []byte(`"x":0,`)}, {1, 7, nil}})
	if string(got) != `{"x":0,"a":2}` {
		t.Fatalf("got %s", got)
	}
}

// TestSetValueAgreesWithSetMembers: the removal that looks only between
// the members cuts what the one that scans the whole object does.
func TestSetValueAgreesWithSetMembers(t *testing.T) {
	bodies := []string{
		`{"a":1, "s":"x", "b":2}`, `{"a":1 , "s":"x"}`, `{"s":"x","a":1}`, `{ "s":"x" }`,
		`{"a":1,"s":"x","t":"y"}`, `{"s":"x","t":"y","a":1}`, `{"s":"x","a":1,"t":"y"}`, `{"s":"x","t":"y"}`,
		"{\n  \"a\": 1,\n  \"s\": \"x\" ,\n  \"t\" : \"u\"\n}", `{"a":[1,{"s":2}],"t":"y"}`, `{"a":1}`,
	}
	for _, body := range bodies {
		b := []byte(body)
		var ms []Member
		MemberSpan(b, 0, func(k []byte, ks, vs, ve int) bool {
			if string(k) == "s" || string(k) == "t" {
				ms = append(ms, Member{ks, vs, ve})
			}
			return true
		})
		want := string(Apply(b, SetMembers(b, 0, func(k []byte) ([]byte, bool) { return nil, string(k) == "s" || string(k) == "t" })))
		if got := string(Apply(b, SetValue(b, ms, nil))); got != want || !json.Valid([]byte(got)) {
			t.Errorf("%s: removed %s, want %s", body, got, want)
		}
		want = string(Apply(b, SetMembers(b, 0, func(k []byte) ([]byte, bool) { return []byte(`"h"`), string(k) == "s" || string(k) == "t" })))
		if got := string(Apply(b, SetValue(b, ms, []byte(`"h"`)))); got != want {
			t.Errorf("%s: replaced %s, want %s", body, got, want)
		}
	}
}
