package control

import (
	"context"

	"freelane/backend/config"
	"freelane/backend/notify"
)

// NotifySwitches reads the configuration's notification switches; a kind
// left unset is on.
func NotifySwitches(n config.Notifications) notify.Switches {
	on := func(b *bool) bool { return b == nil || *b }
	return notify.Switches{Breaker: on(n.Breaker), Key: on(n.Key), Quota: on(n.Quota), Budget: on(n.Budget), Local: on(n.Local)}
}

// Notifications are the notification switches as configured.
func (c *Control) Notifications() notify.Switches {
	c.mu.Lock()
	defer c.mu.Unlock()
	return NotifySwitches(c.doc.Notifications)
}

// SetNotifications stores the notification switches. Each is written
// out, so the stored configuration says what the dashboard chose.
func (c *Control) SetNotifications(ctx context.Context, s notify.Switches) error {
	return c.update(ctx, "", func(doc *config.Config) error {
		doc.Notifications = config.Notifications{Breaker: &s.Breaker, Key: &s.Key, Quota: &s.Quota, Budget: &s.Budget, Local: &s.Local}
		return nil
	})
}
