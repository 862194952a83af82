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
	AutoSendData bool `toml:"auto_send_data" change:"remote"`
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

// minCheckEvery keeps receiptd from polling PosAPI's /rest/info in a
// tight loop.
const minCheckEvery = 10 * time.Second

// maxSendSpread bounds posapi.send_spread: a need left waiting longer
// than this is a reserve left running down.
const maxSendSpread = 10 * time.Minute

// maxMinLotteries bounds posapi.min_lotteries: a PosAPI holds tens of
// thousands at most, and a larger threshold would ask for a sendData at
// every chance.
const maxMinLotteries = 1000000

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

func (p PosAPI) check(ch *checker) {
	if p.CheckEvery.Duration < minCheckEvery {
		ch.add("posapi.check_every", "must be at least %s, not %s", minCheckEvery, p.CheckEvery)
	}
	ch.positive("posapi.send_after", p.SendAfter)
	if p.MinLotteries < 0 || p.MinLotteries > maxMinLotteries {
		ch.add("posapi.min_lotteries", "must be at least 0 and at most %d, not %d", maxMinLotteries, p.MinLotteries)
	}
	if p.SendEvery.Duration < time.Second {
		ch.add("posapi.send_every", "must be at least 1s, not %s", p.SendEvery)
	}
	if p.MaxClockSkew.Duration < time.Second {
		ch.add("posapi.max_clock_skew", "must be at least 1s, not %s", p.MaxClockSkew)
	}
	if p.SendSpread.Duration < 0 || p.SendSpread.Duration > maxSendSpread {
		ch.add("posapi.send_spread", "must be at least 0s and at most %s, not %s", maxSendSpread, p.SendSpread)
	}
	if p.RefillBefore.Duration < time.Minute {
		ch.add("posapi.refill_before", "must be at least 1m, not %s", p.RefillBefore)
	}
}
