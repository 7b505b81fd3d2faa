// The widget's memory of the demo site, as stored.
localStorage.getItem("adlink:demo") || ""
