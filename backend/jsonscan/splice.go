package jsonscan

import "slices"

// Splice replaces b[Start:End] of a body with With; Start == End inserts.
type Splice struct {
	Start, End int
	With       []byte
}

// Apply returns b with the splices made. They must not overlap; they may
// come in any order, and an insertion comes before a splice that starts
// where it does when it was given first.
func Apply(b []byte, splices []Splice) []byte {
	slices.SortStableFunc(splices, func(x, y Splice) int { return x.Start - y.Start })
	n := len(b)
	for _, s := range splices {
		n += len(s.With) - (s.End - s.Start)
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, s := range splices {
		out = append(out, b[pos:s.Start]...)
		out = append(out, s.With...)
		pos = s.End
	}
	return append(out, b[pos:]...)
}

// SetMembers returns the splices that edit the members of the object at
// b[i] == '{' that set names: ok false leaves a member alone, a nil with
// removes it (and the comma that joined it to the others), any other with
// replaces its value. Every other byte of the object, white space
// included, stays as it was.
func SetMembers(b []byte, i int, set func(key []byte) (with []byte, ok bool)) []Splice {
	type member struct {
		ks, ve int
		gone   bool
	}
	var members []member
	var out []Splice
	edited := false
	MemberSpan(b, i, func(key []byte, ks, vs, ve int) bool {
		with, ok := set(key)
		m := member{ks: ks, ve: ve}
		switch {
		case !ok:
		case with == nil:
			m.gone, edited = true, true
		default:
			out = append(out, Splice{vs, ve, with})
		}
		members = append(members, m)
		return true
	})
	if !edited {
		return out
	}
	// A run of removed members goes up to the key of the member after it,
	// taking the commas after each; a run at the end goes from the end of
	// the member before it, taking the commas before each.
	for j := 0; j < len(members); {
		if !members[j].gone {
			j++
			continue
		}
		k := j
		for k+1 < len(members) && members[k+1].gone {
			k++
		}
		switch {
		case k+1 < len(members):
			out = append(out, Splice{members[j].ks, members[k+1].ks, nil})
		case j > 0:
			out = append(out, Splice{members[j-1].ve, members[k].ve, nil})
		default:
			out = append(out, Splice{members[j].ks, members[k].ve, nil})
		}
		j = k + 1
	}
	return out
}

// Member is where one member of an object lies: the opening quote of its
// key and its value's span, as MemberSpan reports them.
type Member struct {
	KeyStart, ValueStart, ValueEnd int
}

// SetValue returns the splices that give each member of ms, members of
// one object of b in the order they come, the value with, or remove them
// (and the commas that joined them to the others) when with is nil. Only
// the bytes between the members are looked at, so it costs nothing like a
// scan of the object.
func SetValue(b []byte, ms []Member, with []byte) []Splice {
	out := make([]Splice, 0, len(ms))
	if with != nil {
		for _, m := range ms {
			out = append(out, Splice{m.ValueStart, m.ValueEnd, with})
		}
		return out
	}
	// end is how far the last removal already reaches back, so that a run
	// of removed members at the end of the object is cut once.
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if j := SkipSpace(b, m.ValueEnd); j < len(b) && b[j] == ',' {
			// A member follows: cut up to its key, commas and all.
			out = append(out, Splice{m.KeyStart, SkipSpace(b, j+1), nil})
			continue
		}
		// The last member: cut from the end of the one before it, taking
		// in the members before it that go too.
		start := m.KeyStart
		for {
			j := start - 1
			for j > 0 && isSpace(b[j]) {
				j--
			}
			if b[j] != ',' {
				break // the object's brace: nothing is left before
			}
			p := j - 1
			for p > 0 && isSpace(b[p]) {
				p--
			}
			if i > 0 && ms[i-1].ValueEnd == p+1 {
				i--
				start = ms[i].KeyStart
				continue
			}
			start = p + 1
			break
		}
		out = append(out, Splice{start, m.ValueEnd, nil})
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
