package postgres

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// SPEC S3: New's refusal of a server that takes no writes names the cause
// from what the server reports of itself (in_hot_standby,
// default_transaction_read_only), which any role may read: a hot standby
// says to connect to the primary, and only a connection whose
// default_transaction_read_only is on blames that setting. A hot standby
// reached by a role that may not call pg_is_in_recovery, its
// default_transaction_read_only off, is reported as a standby.
func TestServerReadOnly_NamesTheCauseTheServerReports(t *testing.T) {
	on, off := "on", "off"
	for _, tc := range []struct {
		name            string
		standby         *string
		defaultReadOnly bool
		says, not       string
	}{
		{"standby", &on, false, "hot standby (in_hot_standby is on); connect to the primary", "turn it off"},
		{"standby with the setting on too", &on, true, "connect to the primary", "turn it off"},
		{"setting on", &off, true, "default_transaction_read_only is on for this connection", "connect to the primary"},
		{"setting on, before PostgreSQL 14", nil, true, "turn it off, or set Config.ReadOnly", "connect to the primary"},
		{"before PostgreSQL 14, setting off", nil, false, "most likely means a hot standby; connect to the primary", "default_transaction_read_only is on"},
		{"neither", &off, false, "transaction_read_only is on for this connection", "default_transaction_read_only is on"},
	} {
		err := serverReadOnly(tc.standby, tc.defaultReadOnly)
		assert.ErrorIs(t, err, ErrServerReadOnly, tc.name)
		assert.Contains(t, err.Error(), tc.says, tc.name)
		assert.NotContains(t, err.Error(), tc.not, tc.name)
	}
}
