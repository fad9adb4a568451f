#!/usr/bin/env bash
# Ruleset generator for the strongest nftables form of the same policy
# (peer 3 of scripts/bench-nft.sh): one forward chain that dispatches on the source address
# through a verdict map (`ip saddr vmap @subjects`, a hash lookup whatever
# the number of subjects) to a per-subject chain:
#   ip daddr @deny_X drop; ip daddr @allow_X accept; ip daddr @learned_X accept; drop
# (deny beats allow; default deny); 853 dropped for all before dispatch;
# ct state established,related accept first; a source from the sandbox
# bridge that is in no subject's entry is dropped (fail closed). No
# prerouting chain and no marks. Same subjects, rules and learned addresses
# as reference.sh; same arguments and modes, with:
#   subject I: add the sets + chain + one vmap element
#   (removal in this form is: delete element, chain and sets, see
#   scripts/bench-nft.sh; MODE without I still prints a full rebuild).
# Env: FWNFT_TABLE (default fwbest), FWNFT_TIMEOUT.
exec env FWNFT_STYLE=best "$(dirname "${BASH_SOURCE[0]}")/reference.sh" "$@"
