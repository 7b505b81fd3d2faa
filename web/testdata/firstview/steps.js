adlink.timing.steps
