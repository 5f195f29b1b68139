package router

import "time"

// TeamSessions is the sessions' homes as the instances of a team share
// them: behind a load balancer a session's next request may reach another
// instance, which must send it where its prompt cache is warm.
// backend/redisstate implements it.
type TeamSessions interface {
	// TeamHome asks the team for the session's home on the route, in at
	// most one round trip under a short deadline; false when the team
	// knows none or cannot be asked now.
	TeamHome(session, route string) (Home, bool)
	// ShareHome tells the team the session's home, in the background.
	ShareHome(session, route string, h Home)
}

// refreshHome is how long a home this instance set or read stands before
// the team is asked again: a session's turns come seconds apart, so a
// turn served elsewhere meanwhile is seen by the next one, and the
// rankings of one request (a retry ranks again) ask once.
const refreshHome = time.Second

// teamSessions is the SessionStore of an instance of a team: the
// in-memory map, refreshed from the team for sessions it does not know
// or has not checked within refreshHome.
type teamSessions struct {
	local *sessionMap
	team  TeamSessions
}

// ShareSessionsWith makes the router share its sessions' homes with the
// other instances of a team. Call it before serving.
func (r *Router) ShareSessionsWith(t TeamSessions) {
	r.sessions = &teamSessions{local: newSessionMap(MaxSessions), team: t}
}

// Home implements SessionStore.
func (s *teamSessions) Home(session, route string, now time.Time) (Home, bool) {
	h, checked, known := s.local.peek(session, route)
	if known && now.Sub(checked) < refreshHome {
		return h, now.Before(h.Until)
	}
	if th, ok := s.team.TeamHome(session, route); ok && th.Until.After(h.Until) {
		// Another instance served the session since this one did.
		h = th
	}
	// A miss is remembered too (with no warm home), so that the team is
	// not asked again for a second.
	s.local.set(session, route, h, now, now)
	return h, now.Before(h.Until)
}

// SetHome implements SessionStore.
func (s *teamSessions) SetHome(session, route string, h Home, now time.Time) {
	s.local.set(session, route, h, now, now)
	s.team.ShareHome(session, route, h)
}
