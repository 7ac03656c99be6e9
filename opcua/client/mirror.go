package client

import "context"

// mirrorTo activates the lost session on a new channel to `to`.
func (c *Client) mirrorTo(ctx context.Context, to *server, lost *conn, subs []*userSub) (done bool, fallback string) {
	return false, "not yet"
}
