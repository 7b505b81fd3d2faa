Object.prototype.evil = "1";
