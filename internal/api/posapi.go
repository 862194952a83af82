package api

import (
	"time"

	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/statuspage"
)

// posapiPage is what the status page shows of PosAPI's own limits; nil
// without a watcher.
func (s *Server) posapiPage(st posapi.Status) *statuspage.PosAPI {
	if s.d.PosAPI == nil {
		return nil
	}
	p := &statuspage.PosAPI{
		LeftLotteries: st.LeftLotteries, PerHour: st.PerHour, Need: st.Need, SkewSource: st.SkewSource,
		AutoSendData: st.AutoSendData, MinLotteries: st.MinLotteries, SendEvery: st.SendEvery,
		MaxClockSkew: st.MaxClockSkew, LastSentAge: -1,
		Shared: st.Shared, OwnShare: st.OwnShare, PacePerHour: st.PacePerHour,
	}
	if st.PosNo != nil {
		p.PosNo = *st.PosNo
	}
	if st.LotteriesRunOutAt != nil {
		p.RunOutAt = *st.LotteriesRunOutAt
	}
	if st.LastSentDate != nil {
		p.LastSentDate = *st.LastSentDate
	}
	if st.LastSentAgeSeconds != nil {
		p.LastSentAge = time.Duration(*st.LastSentAgeSeconds) * time.Second
	}
	if st.ClockSkewSeconds != nil {
		skew := time.Duration(*st.ClockSkewSeconds) * time.Second
		p.ClockSkew = &skew
	}
	if l := st.LastSendData; l != nil {
		p.LastSendData = &statuspage.SendData{At: l.At, OK: l.OK, Message: l.Message, Reason: l.Reason}
	}
	return p
}
