document.title += "\uD800"; document.getElementById("p").append(" \uDC00 Kopfhörer \uD83D");
