"""Owner signatures: OpenSSH SSHSIG over canonical approval statements.

`packet` splits a packet file into its signed body and `signatures:` tail (at every YAML line
break) and signs/verifies entries; `sshsig`, `sshkeys`, `sshwire` implement PROTOCOL.sshsig;
`keyfiles` and `sshagent` obtain signers; `allowed_signers` reads ssh-keygen's allowed_signers
format (and finds git's `gpg.ssh.allowedSignersFile`); `explain` prints the `ssh-keygen -Y
verify` commands that check each signature independently.
"""
