document.getElementById("own") ? document.getElementById("own").outerHTML : "gone"
