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
