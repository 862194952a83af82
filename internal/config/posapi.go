package config

import "time"

// PosAPI is what receiptd watches of PosAPI's own limits and does about
// them: its lottery reserve (leftLotteries), its last send of data to the
// tax authority (lastSentDate) and the tax service's clock.
type PosAPI struct {
	// CheckEvery is the longest time between two reads of /rest/info while
	// PosAPI answers (the lookup cache's reads count too); at least 10s.
	CheckEvery Duration `toml:"check_every" change:"remote"`
	// AutoSendData lets receiptd call GET /rest/sendData itself when
	// SendAfter or MinLotteries say so; false only warns.
	AutoSendData bool `toml:"auto_send_data" change:"named"`
	// SendAfter: a lastSentDate older than this asks for a sendData.
	SendAfter Duration `toml:"send_after" change:"remote"`
	// MinLotteries: fewer lottery numbers left than this asks for a
	// sendData; 0 only when the reserve is empty.
	MinLotteries int `toml:"min_lotteries" change:"remote"`
	// SendEvery is the shortest time between two sendData calls of
	// receiptd's own (a POS's are passed through whenever it calls); at
	// least 1s.
	SendEvery Duration `toml:"send_every" change:"remote"`
	// MaxClockSkew is the largest difference between the tax service's
	// clock and ours that is not a problem; at least 1s.
	MaxClockSkew Duration `toml:"max_clock_skew" change:"remote"`
	// SendSpread is the longest random wait before receiptd's own
	// sendData, after which /rest/info is read again and the call made
	// only if the need still holds: many tills on one PosAPI make one call
	// for one need. 0s: call at once.
	SendSpread Duration `toml:"send_spread" change:"remote"`
	// RefillBefore: a reserve forecast to run out within this (at PosAPI's
	// own pace, all its tills together) asks for a sendData; at least 1m.
	RefillBefore Duration `toml:"refill_before" change:"remote"`
}

func defaultPosAPI() PosAPI {
	return PosAPI{
		CheckEvery:   Dur(10 * time.Minute),
		AutoSendData: true,
		SendAfter:    Dur(12 * time.Hour),
		MinLotteries: 200,
		SendEvery:    Dur(time.Hour),
		MaxClockSkew: Dur(2 * time.Minute),
		SendSpread:   Dur(30 * time.Second),
		RefillBefore: Dur(2 * time.Hour),
	}
}
