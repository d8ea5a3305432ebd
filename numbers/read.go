package numbers

import (
	"errors"
	"fmt"
	"net/http"

	"switchboard/api/httpx"
	"switchboard/store"
)

func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	n, err := getOwned(r.Context(), s.st, r.PathValue("id"))
	if err != nil {
		return err
	}
	rec, err := s.view(r.Context(), s.st, n, nil)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, rec)
	return nil
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	p, err := httpx.PageOf(r.URL.Query(), "page_size", "page_token")
	if err != nil {
		return err
	}
	ns, next, err := s.st.Numbers().List(r.Context(), httpx.TeamOf(r.Context()), p)
	if errors.Is(err, store.ErrBadPageToken) {
		return httpx.BadRequest("page_token", "page_token was not issued by this server")
	}
	if err != nil {
		return fmt.Errorf("list phone numbers: %w", err)
	}
	out := ListResponse{PhoneNumbers: make([]*Record, 0, len(ns)), NextPageToken: next}
	names := map[string]string{}
	for _, n := range ns {
		rec, err := s.view(r.Context(), s.st, n, names)
		if err != nil {
			return err
		}
		out.PhoneNumbers = append(out.PhoneNumbers, rec)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	err := s.st.Tx(ctx, func(tx store.Store) error {
		n, err := getOwned(ctx, tx, r.PathValue("id"))
		if err != nil {
			return err
		}
		if err := tx.Numbers().DeleteWebhook(ctx, n.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Registrations().Delete(ctx, n.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Numbers().Delete(ctx, n.ID); err != nil {
			return err
		}
		return httpx.Audit(ctx, tx, "phone_number.delete", "phone_number/"+n.ID,
			fmt.Sprintf("deleted number %s (%q)", n.PhoneNumber, n.Name))
	})
	if err != nil {
		return storeErr("delete phone number", err)
	}
	s.registrationsChanged()
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
