window.earlyMatch
