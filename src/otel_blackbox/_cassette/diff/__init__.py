"""Where two cassettes stop agreeing (``divergence``, down to the first differing JSON path:
``json_paths``), and whether that changed what the run did (``outcome``); ``report`` answers both,
``text`` says it in lines."""
