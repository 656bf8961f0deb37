"""The groups' own messages (extensions: the spec has none for groups or codes)."""

CODE_INVALID = "coupon_code must be 1 to 100 letters, digits, - or _"
CODE_PARTNER_NOT_ENROLLED = "The partner is not enrolled in this program"
CODE_TAKEN = "The code {code} is already used in this program"
GROUP_NOT_FOUND = "Group not found"
GROUP_NAME_TAKEN = "A group named {name} already exists in this program"
GROUP_DEFAULT_NOT_DELETABLE = "The default group cannot be deleted"
GROUP_NOT_EMPTY = "Move this group's {count} partners to another group before deleting it"
