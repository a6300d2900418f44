//! Smaller promises: the disk quota counts extents, approvals cover presentation, trust exemptions are keyed by hash or signer, debug logs keep secrets out.
