package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
)

// A create sends the POS's bytes as they are; the answer's Status decides
// the outcome, and its Body (lottery number and QR data included) is for
// the POS only: never stored, never logged.
func ExampleClient_CreateReceipt() {
	s := sim.New(sim.Options{}) // the project's tax service simulator
	if err := s.Start("127.0.0.1:0"); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	c, err := client.New(client.Config{BaseURL: s.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := c.CreateReceipt(context.Background(), sim.SampleReceipt("POS-1", "0001"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.HTTPStatus, r.Status, len(r.ID))
	// Output: 200 SUCCESS 33
}

// The tax service refusing a receipt is an *Error of class Rejected: the
// caller records the outcome and must not send the same body again.
func ExampleClient_CreateReceipt_rejected() {
	s := sim.New(sim.Options{}) // the project's tax service simulator
	if err := s.Start("127.0.0.1:0"); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: "merchantTin: not registered"}); err != nil {
		fmt.Println(err)
		return
	}

	c, err := client.New(client.Config{BaseURL: s.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := c.CreateReceipt(context.Background(), sim.SampleReceipt("POS-1", "0002"))
	class, _ := client.ClassOf(err)
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Printf("%d %s %s: %s\n", r.HTTPStatus, r.Status, class, e.Message)
	}
	// Output: 400 ERROR rejected: merchantTin: not registered
}

// ClassOf tells the caller what it may do after a failed call: a NotSent
// request never reached the tax service and may be sent again at once; an
// Ambiguous one may have been issued.
func ExampleClassOf() {
	s := sim.New(sim.Options{}) // the project's tax service simulator
	if err := s.Start("127.0.0.1:0"); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.SetFaults(sim.Faults{Down: true}); err != nil {
		fmt.Println(err)
		return
	}

	c, err := client.New(client.Config{BaseURL: s.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.CreateReceipt(context.Background(), sim.SampleReceipt("POS-1", "0003"))
	class, ok := client.ClassOf(err)
	fmt.Println(class, ok)
	// Output: not sent true
}
